# kernels.cmake - the kernel layer's sources, one folder per instruction set, with the compiler
# flags attached to the folder (docs/ARCHITECTURE.md §3). Top-level files (dispatch, the front
# ends every ISA goes through, GEMM driver and packing, row splitting) are plain C for any CPU and
# are globbed by the top-level CMakeLists.txt; here the ISA folders are added to g4v_obj_kernels.
#
#   portable/        plain C, -ffp-contract=off: the specification in code; the GEMM reference and
#                    the portable kernels must never fuse a multiply and an add, on any CPU
#   x86_avx2/        -mavx2 -mfma
#   x86_avx512/      + -mavx512f -mavx512bw -mavx512vl -mavx512dq
#   x86_avx512bf16/  + -mavx512bf16
#   x86_avx512vnni/  + -mavx512vnni (the INT8 GEMM, vpdpbusd on zmm)
#   x86_avxvnni/     x86_avx2's + -mavxvnni (the INT8 GEMM, VEX vpdpbusd on ymm)
#   x86_sha/         -msha -mssse3 -msse4.1 (the SHA-256 compression)
#   arm64_neon/      -march=armv8-a (NEON: every ARMv8-A core)
#   arm64_bf16/      -march=armv8.2-a+bf16 (BFDOT: Neoverse V1/V2/N2, Graviton 3/4, Apple M2+)
#   arm64_dotprod/   -march=armv8.2-a+dotprod (SDOT, the INT8 GEMM: Neoverse N1+, Apple M1+)
#   arm64_i8mm/      -march=armv8.6-a+i8mm (SMMLA, the INT8 GEMM: Neoverse V1/V2/N2, Apple M2+)
# The ARM folders are compiled with -ffp-contract=off: GCC fuses an intrinsic multiply and add
# into an FMA at its default (-ffp-contract=fast), which would break the bit-identity of rope_row,
# add_row and the INT8 GEMM's dequantize-then-accumulate with the portable kernels; explicit FMA
# intrinsics (vfmaq) stay FMAs. And with
# -fno-schedule-insns: GCC's scheduler before register allocation lifts loads ahead and pushes
# the 8 x 12 GEMM tiles past the 32 vector registers (accumulator spills in the inner loop, seen
# in the assembly); without it they fit (bench/arm64_mca.py checks the loops).
# Code in an ISA folder runs only where the kernel table chose it (dispatch.c, from CPUID), so
# its flags never leak into code that runs everywhere. G4V_X86 and G4V_ARM64 (top-level
# CMakeLists.txt) say whether the x86 or the ARM64 folders are in this build.
set(G4V_KERNEL_DIR ${PROJECT_SOURCE_DIR}/src/kernels)
set(G4V_KERNEL_FLAGS_portable -ffp-contract=off)
set(G4V_KERNEL_FLAGS_x86_avx2 -mavx2 -mfma)
set(G4V_KERNEL_FLAGS_x86_avx512 ${G4V_KERNEL_FLAGS_x86_avx2} -mavx512f -mavx512bw -mavx512vl
    -mavx512dq)
set(G4V_KERNEL_FLAGS_x86_avx512bf16 ${G4V_KERNEL_FLAGS_x86_avx512} -mavx512bf16)
set(G4V_KERNEL_FLAGS_x86_avx512vnni ${G4V_KERNEL_FLAGS_x86_avx512} -mavx512vnni)
set(G4V_KERNEL_FLAGS_x86_avxvnni ${G4V_KERNEL_FLAGS_x86_avx2} -mavxvnni)
set(G4V_KERNEL_FLAGS_x86_sha -msha -mssse3 -msse4.1)
set(G4V_KERNEL_FLAGS_arm64_neon -march=armv8-a -ffp-contract=off -fno-schedule-insns)
set(G4V_KERNEL_FLAGS_arm64_bf16 -march=armv8.2-a+bf16 -ffp-contract=off -fno-schedule-insns)
set(G4V_KERNEL_FLAGS_arm64_dotprod -march=armv8.2-a+dotprod -ffp-contract=off -fno-schedule-insns)
set(G4V_KERNEL_FLAGS_arm64_i8mm -march=armv8.6-a+i8mm -ffp-contract=off -fno-schedule-insns)

set(G4V_KERNEL_FOLDERS portable)
if(G4V_X86)
  list(APPEND G4V_KERNEL_FOLDERS x86_avx2 x86_avx512 x86_avx512bf16 x86_avx512vnni x86_avxvnni
       x86_sha)
elseif(G4V_ARM64)
  list(APPEND G4V_KERNEL_FOLDERS arm64_neon arm64_bf16 arm64_dotprod arm64_i8mm)
endif()

# g4v_kernel_sources(<out-var> <folder>...): the .c files of those folders.
function(g4v_kernel_sources out)
  set(srcs)
  foreach(folder IN LISTS ARGN)
    file(GLOB _s CONFIGURE_DEPENDS ${G4V_KERNEL_DIR}/${folder}/*.c)
    list(APPEND srcs ${_s})
  endforeach()
  set(${out} ${srcs} PARENT_SCOPE)
endfunction()

# g4v_kernel_folder_flags(<folder>...): attaches each folder's flags to its files (any target).
function(g4v_kernel_folder_flags)
  foreach(folder IN LISTS ARGN)
    g4v_kernel_sources(_s ${folder})
    set_source_files_properties(${_s} PROPERTIES COMPILE_OPTIONS "${G4V_KERNEL_FLAGS_${folder}}")
  endforeach()
endfunction()

# Files in ISA folders whose variants must give the portable bits (rope_row and add_row keep
# every product and add separate; the INT8 GEMMs' dequantizing multiply and accumulate): GCC would otherwise fuse an intrinsic multiply and add (its
# default is -ffp-contract=fast); explicit FMA intrinsics (V_FMA) stay FMAs.
set(G4V_KERNEL_NO_CONTRACT x86_avx2/rows_avx2.c x86_avx512/rows_avx512.c x86_avx2/gemm_q8_avx2.c
    x86_avx512vnni/gemm_q8_avx512vnni.c x86_avx512vnni/gemm_q8b_avx512vnni.c
    x86_avxvnni/gemm_q8_avxvnni.c)
function(g4v_kernel_no_contract_flags)
  if(G4V_X86)
    foreach(f IN LISTS G4V_KERNEL_NO_CONTRACT)
      set_property(SOURCE ${G4V_KERNEL_DIR}/${f} APPEND PROPERTY COMPILE_OPTIONS -ffp-contract=off)
    endforeach()
  endif()
endfunction()

g4v_kernel_sources(_g4v_isa_srcs ${G4V_KERNEL_FOLDERS})
target_sources(g4v_obj_kernels PRIVATE ${_g4v_isa_srcs})
g4v_kernel_folder_flags(${G4V_KERNEL_FOLDERS})
g4v_kernel_no_contract_flags()
