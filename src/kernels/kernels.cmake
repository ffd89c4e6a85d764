# kernels.cmake - the kernel layer's instruction-set folders and their compiler flags: one table
# (docs/ARCHITECTURE.md §3, CONTRIBUTING.md "Adding an instruction set"). Top-level files
# (dispatch, the front ends every ISA goes through, GEMM driver and packing, row splitting) are
# plain C for any CPU and are globbed by the top-level CMakeLists.txt; here the ISA folders are
# found and added to g4v_obj_kernels, each with its table row's flags.
#
# The folders are found by glob: portable/ always, x86_* in an x86-64 build (G4V_X86), arm64_* in
# an ARM64 build (G4V_ARM64), and every .c file in them; a folder without a row below, or a row
# without its folder, stops the configure. Code in an ISA folder runs only where the kernel table
# chose it (dispatch.c, from CPUID or HWCAP), so its flags never leak into code that runs
# everywhere.
#
# g4v_kernel_folder(<folder> [EXACT] [EXTENDS <folder>] [FLAGS <flag>...]): one row.
#   FLAGS    the instruction set's flags (-m..., -march=...);
#   EXTENDS  starts from another folder's FLAGS (AVX-512 code also uses AVX2 + FMA);
#   EXACT    the folder holds a variant that must give the portable kernel's bits (the portable
#            kernels themselves; RoPE and residual add; the INT8 GEMMs' dequantizing multiply
#            and accumulate). It is built with -ffp-contract=off: GCC would otherwise fuse an
#            intrinsic (or plain C) multiply and add into an FMA at its default
#            (-ffp-contract=fast); explicit FMA intrinsics (V_FMA, vfmaq) stay FMAs. Every file
#            of the folder gets it, so a new exact variant has nothing to remember.
# Every arm64_* folder also gets -fno-schedule-insns: GCC's scheduler before register allocation
# lifts loads ahead and pushes the 8 x 12 GEMM tiles past the 32 vector registers (accumulator
# spills in the inner loop); without it they fit (bench/arm64_mca.py checks the loops).
set(G4V_KERNEL_DIR ${PROJECT_SOURCE_DIR}/src/kernels)
set(G4V_KERNEL_ARCH_FLAGS_arm64 -fno-schedule-insns)
set(G4V_KERNEL_TABLE)

function(g4v_kernel_folder folder)
  cmake_parse_arguments(K "EXACT" "EXTENDS" "FLAGS" ${ARGN})
  set(isa ${G4V_KERNEL_ISA_FLAGS_${K_EXTENDS}} ${K_FLAGS})
  set(flags ${isa})
  if(K_EXACT)
    list(APPEND flags -ffp-contract=off)
  endif()
  string(REGEX MATCH "^[a-z0-9]+_" arch "${folder}")
  string(REGEX REPLACE "_$" "" arch "${arch}")
  list(APPEND flags ${G4V_KERNEL_ARCH_FLAGS_${arch}})
  set(G4V_KERNEL_ISA_FLAGS_${folder} ${isa} PARENT_SCOPE)
  set(G4V_KERNEL_FLAGS_${folder} ${flags} PARENT_SCOPE)
  set(G4V_KERNEL_TABLE ${G4V_KERNEL_TABLE} ${folder} PARENT_SCOPE)
endfunction()

# The table. Folder           exactness  flags
g4v_kernel_folder(portable       EXACT) # plain C: the specification in code, on any CPU
g4v_kernel_folder(x86_avx2       EXACT FLAGS -mavx2 -mfma)
g4v_kernel_folder(x86_avx512     EXACT EXTENDS x86_avx2 FLAGS -mavx512f -mavx512bw -mavx512vl
                                                              -mavx512dq)
g4v_kernel_folder(x86_avx512bf16       EXTENDS x86_avx512 FLAGS -mavx512bf16) # FAST only
g4v_kernel_folder(x86_avx512vnni EXACT EXTENDS x86_avx512 FLAGS -mavx512vnni) # INT8, zmm
g4v_kernel_folder(x86_avxvnni    EXACT EXTENDS x86_avx2 FLAGS -mavxvnni) # INT8, VEX on ymm
g4v_kernel_folder(x86_amx        EXACT EXTENDS x86_avx512bf16) # tiles: our own asm (amx_tile.h)
g4v_kernel_folder(x86_sha              FLAGS -msha -mssse3 -msse4.1) # integer: SHA-256
g4v_kernel_folder(arm64_neon     EXACT FLAGS -march=armv8-a) # every ARMv8-A core
g4v_kernel_folder(arm64_bf16     EXACT FLAGS -march=armv8.2-a+bf16) # BFDOT
g4v_kernel_folder(arm64_dotprod  EXACT FLAGS -march=armv8.2-a+dotprod) # SDOT: INT8
g4v_kernel_folder(arm64_i8mm     EXACT FLAGS -march=armv8.6-a+i8mm) # SMMLA: INT8

# This build's folders, by glob: portable/ and those of the architecture.
set(_g4v_kernel_globs portable)
if(G4V_X86)
  list(APPEND _g4v_kernel_globs "x86_*")
elseif(G4V_ARM64)
  list(APPEND _g4v_kernel_globs "arm64_*")
endif()
set(_g4v_found)
foreach(_g IN LISTS _g4v_kernel_globs)
  file(GLOB _dirs LIST_DIRECTORIES true RELATIVE ${G4V_KERNEL_DIR} CONFIGURE_DEPENDS
       ${G4V_KERNEL_DIR}/${_g})
  foreach(_d IN LISTS _dirs)
    if(IS_DIRECTORY ${G4V_KERNEL_DIR}/${_d})
      list(APPEND _g4v_found ${_d})
    endif()
  endforeach()
endforeach()
foreach(_d IN LISTS _g4v_found)
  if(NOT _d IN_LIST G4V_KERNEL_TABLE)
    message(FATAL_ERROR "src/kernels/${_d}/ has no row in the table of src/kernels/kernels.cmake "
                        "(CONTRIBUTING.md, \"Adding an instruction set\")")
  endif()
endforeach()
set(G4V_KERNEL_FOLDERS) # in table order
foreach(_d IN LISTS G4V_KERNEL_TABLE)
  if(NOT IS_DIRECTORY ${G4V_KERNEL_DIR}/${_d})
    message(FATAL_ERROR "src/kernels/kernels.cmake has a row for ${_d}, which is not a folder "
                        "of src/kernels/")
  endif()
  if(_d IN_LIST _g4v_found)
    list(APPEND G4V_KERNEL_FOLDERS ${_d})
  endif()
endforeach()

# g4v_kernel_sources(<out-var> <folder>...): the .c files of those folders.
function(g4v_kernel_sources out)
  set(srcs)
  foreach(folder IN LISTS ARGN)
    file(GLOB _s CONFIGURE_DEPENDS ${G4V_KERNEL_DIR}/${folder}/*.c)
    list(APPEND srcs ${_s})
  endforeach()
  set(${out} ${srcs} PARENT_SCOPE)
endfunction()

# g4v_kernel_folder_flags(<folder>...): attaches each folder's flags to its files (for the
# targets of the calling directory).
function(g4v_kernel_folder_flags)
  foreach(folder IN LISTS ARGN)
    g4v_kernel_sources(_s ${folder})
    set_source_files_properties(${_s} PROPERTIES COMPILE_OPTIONS "${G4V_KERNEL_FLAGS_${folder}}")
  endforeach()
endfunction()

g4v_kernel_sources(_g4v_isa_srcs ${G4V_KERNEL_FOLDERS})
target_sources(g4v_obj_kernels PRIVATE ${_g4v_isa_srcs})
g4v_kernel_folder_flags(${G4V_KERNEL_FOLDERS})

