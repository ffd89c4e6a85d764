# isa_flags.cmake - per-file instruction-set flags for the GEMM micro-kernels, attention and GeGLU.
# Only the files holding one ISA's micro-kernel get that ISA's flags (never the whole library):
# the dispatcher (gemm.c) calls them only when CPUID reports the ISA. The portable kernel and
# the reference must not fuse multiply and add, so they stay bit-identical on every CPU.
set(_g4v_k ${PROJECT_SOURCE_DIR}/src/kernels)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(G4V_AVX2_FLAGS "-mavx2;-mfma")
  set(G4V_AVX512_FLAGS "-mavx2;-mfma;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq")
  set_source_files_properties(${_g4v_k}/gemm_avx2.c ${_g4v_k}/attention_avx2.c
                              ${_g4v_k}/gelu_avx2.c PROPERTIES
                              COMPILE_OPTIONS "${G4V_AVX2_FLAGS}")
  set_source_files_properties(${_g4v_k}/gemm_avx512.c ${_g4v_k}/attention_avx512.c PROPERTIES
                              COMPILE_OPTIONS "${G4V_AVX512_FLAGS}")
  set_source_files_properties(${_g4v_k}/gemm_avx512bf16.c PROPERTIES COMPILE_OPTIONS
                              "${G4V_AVX512_FLAGS};-mavx512bf16")
endif()
set_source_files_properties(${_g4v_k}/gemm_ref.c ${_g4v_k}/gemm_portable.c PROPERTIES
                            COMPILE_OPTIONS "-ffp-contract=off")
