# Optional: llama.cpp's libllama for `g4v chat` (docs/CHAT.md). libg4v never links it; only the
# g4v tool's chat front end (chat/) and its tests do. Looked up, in order, under
#   -DG4V_LLAMA_DIR=PREFIX, $G4V_LLAMA_DIR, and the cache scripts/build-llama.sh fills by default
#   (~/.cache/g4v-llama/<pinned commit>-cpu-variants, or under $G4V_LLAMA_CACHE): libllama with
#   llama.cpp's CPU backend variants, of which chat/chat_backend.c loads the best at run time.
#   Its other builds (--avx2: <commit>, --bench: <commit>-native) are used only when named.
# Without it `g4v chat` says how to get it, and the chat tests are skipped.
set(G4V_LLAMA_COMMIT de3ff815ea7d559ee917f063901b8986f038abc6) # node-llama-cpp@3.22.1's release
set(_g4v_llama_hints)
if(DEFINED ENV{G4V_LLAMA_DIR})
  list(APPEND _g4v_llama_hints "$ENV{G4V_LLAMA_DIR}")
endif()
if(DEFINED ENV{G4V_LLAMA_CACHE})
  list(APPEND _g4v_llama_hints "$ENV{G4V_LLAMA_CACHE}/${G4V_LLAMA_COMMIT}-cpu-variants")
endif()
list(APPEND _g4v_llama_hints "$ENV{HOME}/.cache/g4v-llama/${G4V_LLAMA_COMMIT}-cpu-variants")
set(G4V_LLAMA_DIR "" CACHE PATH "llama.cpp install prefix with lib/libllama and include/llama.h")
set(G4V_LLAMA_SRC "" CACHE PATH "llama.cpp source tree (gguf-py, the Gemma 4 vocabulary) for the chat tests")
option(G4V_CHAT "Build g4v chat when libllama is found" ON)

set(G4V_HAVE_LLAMA OFF)
if(G4V_CHAT)
  set(_g4v_llama_dirs ${G4V_LLAMA_DIR})
  if(NOT G4V_LLAMA_DIR)
    set(_g4v_llama_dirs ${_g4v_llama_hints})
  endif()
  unset(G4V_LLAMA_LIB CACHE)
  unset(G4V_LLAMA_INCLUDE CACHE)
  unset(G4V_MTMD_LIB CACHE)
  unset(G4V_GGML_LIB CACHE)
  unset(G4V_GGML_BASE_LIB CACHE)
  find_library(G4V_LLAMA_LIB NAMES llama PATHS ${_g4v_llama_dirs} PATH_SUFFIXES lib lib64
               NO_DEFAULT_PATH)
  find_path(G4V_LLAMA_INCLUDE llama.h PATHS ${_g4v_llama_dirs} PATH_SUFFIXES include
            NO_DEFAULT_PATH)
  find_library(G4V_MTMD_LIB NAMES mtmd PATHS ${_g4v_llama_dirs} PATH_SUFFIXES lib lib64
               NO_DEFAULT_PATH)
  # ggml's backend registry (libggml) and backend API (libggml-base): chat/chat_backend.c
  # loads and describes the CPU backend through them
  find_library(G4V_GGML_LIB NAMES ggml PATHS ${_g4v_llama_dirs} PATH_SUFFIXES lib lib64
               NO_DEFAULT_PATH)
  find_library(G4V_GGML_BASE_LIB NAMES ggml-base PATHS ${_g4v_llama_dirs} PATH_SUFFIXES lib lib64
               NO_DEFAULT_PATH)
  if(G4V_LLAMA_LIB AND G4V_LLAMA_INCLUDE AND G4V_GGML_LIB AND G4V_GGML_BASE_LIB)
    set(G4V_HAVE_LLAMA ON)
    get_filename_component(G4V_LLAMA_LIBDIR ${G4V_LLAMA_LIB} DIRECTORY)
    get_filename_component(G4V_LLAMA_PREFIX ${G4V_LLAMA_INCLUDE} DIRECTORY)
    add_library(g4v_llama INTERFACE)
    target_include_directories(g4v_llama INTERFACE ${G4V_LLAMA_INCLUDE})
    target_link_libraries(g4v_llama INTERFACE ${G4V_LLAMA_LIB} ${G4V_GGML_LIB} ${G4V_GGML_BASE_LIB}
                          ${CMAKE_DL_LIBS})
    message(STATUS "g4v chat: libllama ${G4V_LLAMA_LIB}")
    # llama.cpp's source tree (gguf-py, models/ggml-vocab-gemma-4.gguf) for the chat tests'
    # synthetic text models: scripts/build-llama.sh keeps it as PREFIX/src
    if(NOT G4V_LLAMA_SRC AND EXISTS "${G4V_LLAMA_PREFIX}/src/gguf-py")
      set(G4V_LLAMA_SRC "${G4V_LLAMA_PREFIX}/src" CACHE PATH "llama.cpp source tree" FORCE)
    endif()
    if(G4V_MTMD_LIB)
      message(STATUS "g4v chat: libmtmd ${G4V_MTMD_LIB} (the chat tests compare with it)")
    endif()
  else()
    message(STATUS "g4v chat: libllama not found (scripts/build-llama.sh, or -DG4V_LLAMA_DIR=PREFIX): "
                   "g4v chat is a stub and the chat tests are skipped")
  endif()
endif()
