# Chat templates' Jinja engine (chat/chat_jinja.h, docs/CHAT.md "Jinja engine"):
# llama.cpp's own engine (common/jinja, the one llama-server renders chat templates with),
# compiled from the pinned source tree G4V_LLAMA_SRC, never copied into this repository.
# Only with libllama and that tree (cmake/Llama.cmake); C++ is enabled for this alone, so a
# build without libllama needs no C++ compiler.
#   g4v_jinja_engine  llama.cpp's sources (third-party: built without our warning flags)
#   g4v_jinja         our C API over it (chat/chat_jinja.cpp), what C code links
set(G4V_HAVE_CHAT_JINJA OFF)
set(_g4v_jinja_dir "${G4V_LLAMA_SRC}/common/jinja")
if(G4V_HAVE_LLAMA AND G4V_LLAMA_SRC AND EXISTS "${_g4v_jinja_dir}/runtime.cpp")
  # The C++ compiler of the C compiler's family (clang -> clang++, aarch64-linux-gnu-gcc ->
  # aarch64-linux-gnu-g++), so the sanitizer and coverage flags fit both; -DCMAKE_CXX_COMPILER wins.
  if(NOT CMAKE_CXX_COMPILER AND NOT DEFINED ENV{CXX})
    get_filename_component(_g4v_cc_name "${CMAKE_C_COMPILER}" NAME)
    get_filename_component(_g4v_cc_dir "${CMAKE_C_COMPILER}" DIRECTORY)
    # if(MATCHES) rather than REGEX REPLACE: CMake refuses "\\1" when the optional group did
    # not take part ("clang" alone), so the version suffix is carried by hand.
    set(_g4v_cxx_name "${_g4v_cc_name}")
    if(_g4v_cc_name MATCHES "^(.*)gcc(-[0-9.]+)?$")
      set(_g4v_cxx_name "${CMAKE_MATCH_1}g++${CMAKE_MATCH_2}")
    elseif(_g4v_cc_name MATCHES "^(.*)clang(-[0-9.]+)?$")
      set(_g4v_cxx_name "${CMAKE_MATCH_1}clang++${CMAKE_MATCH_2}")
    endif()
    if(NOT _g4v_cxx_name STREQUAL _g4v_cc_name AND EXISTS "${_g4v_cc_dir}/${_g4v_cxx_name}")
      set(CMAKE_CXX_COMPILER "${_g4v_cc_dir}/${_g4v_cxx_name}")
    endif()
  endif()
  include(CheckLanguage)
  check_language(CXX)
  if(CMAKE_CXX_COMPILER)
    enable_language(CXX)
    set(G4V_HAVE_CHAT_JINJA ON)
  else()
    message(STATUS "g4v chat: no C++ compiler: llama.cpp's Jinja engine (chat templates) "
                   "is left out")
  endif()
endif()

if(G4V_HAVE_CHAT_JINJA)
  # The engine plus the two files of llama.cpp's common/ it needs: json.cpp (common_json, the
  # JSON -> template value conversion, over vendor/nlohmann; its asserts are ggml's, from
  # libggml-base) and unicode.cpp (UTF-8 decoding for tojson's ensure_ascii). Nothing else of
  # common/ (chat.cpp, arg.cpp: the network and the whole CLI stack).
  file(GLOB _g4v_jinja_srcs CONFIGURE_DEPENDS "${_g4v_jinja_dir}/*.cpp")
  add_library(g4v_jinja_engine STATIC ${_g4v_jinja_srcs} "${G4V_LLAMA_SRC}/common/json.cpp"
              "${G4V_LLAMA_SRC}/common/unicode.cpp")
  set_target_properties(g4v_jinja_engine PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON
                        CXX_EXTENSIONS OFF POSITION_INDEPENDENT_CODE ON)
  # common/ first: value.cpp's "unicode.h" is common/unicode.h, not src/unicode.h
  target_include_directories(g4v_jinja_engine SYSTEM PUBLIC "${G4V_LLAMA_SRC}/common"
                             PRIVATE "${G4V_LLAMA_SRC}/vendor")
  # third-party code: its warnings are not ours to fix and must not break -Werror
  target_compile_options(g4v_jinja_engine PRIVATE -w)
  target_link_libraries(g4v_jinja_engine PUBLIC g4v_llama)

  add_library(g4v_jinja STATIC ${PROJECT_SOURCE_DIR}/chat/chat_jinja.cpp)
  set_target_properties(g4v_jinja PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON
                        CXX_EXTENSIONS OFF)
  target_include_directories(g4v_jinja PUBLIC ${PROJECT_SOURCE_DIR}/chat)
  target_link_libraries(g4v_jinja PRIVATE g4v_jinja_engine)
  message(STATUS "g4v chat: Jinja engine from ${_g4v_jinja_dir}")
endif()

# JSON Schema -> GBNF grammar (chat/chat_grammar.h, docs/CHAT.md "Grammar layer"):
# llama.cpp's own converter (common/json-schema-to-grammar.cpp, the one llama-server turns
# response_format into a grammar with), built from the same pinned tree under the same
# conditions as the Jinja engine, over the json.cpp + unicode.cpp that g4v_jinja_engine already
# compiles. common.cpp is NOT compiled (it drags in the CLI and network stack): the three string
# helpers the converter takes from it are ours (chat/chat_common_strings.cpp).
#   g4v_schema_engine  llama.cpp's converter sources (third-party: -w)
#   g4v_chat_schema    our C API over it (chat/chat_schema_grammar.cpp); g4v_chat links it
set(G4V_HAVE_CHAT_SCHEMA OFF)
if(G4V_HAVE_CHAT_JINJA AND EXISTS "${G4V_LLAMA_SRC}/common/json-schema-to-grammar.cpp"
   AND EXISTS "${G4V_LLAMA_SRC}/common/json-schema.cpp")
  set(G4V_HAVE_CHAT_SCHEMA ON)
  add_library(g4v_schema_engine STATIC "${G4V_LLAMA_SRC}/common/json-schema-to-grammar.cpp"
              "${G4V_LLAMA_SRC}/common/json-schema.cpp" "${G4V_LLAMA_SRC}/common/trie.cpp"
              ${PROJECT_SOURCE_DIR}/chat/chat_common_strings.cpp)
  set_target_properties(g4v_schema_engine PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON
                        CXX_EXTENSIONS OFF POSITION_INDEPENDENT_CODE ON)
  # common.h includes llama.h and ggml.h (declarations only: nothing of common.cpp is linked)
  target_include_directories(g4v_schema_engine PRIVATE "${G4V_LLAMA_SRC}/vendor")
  target_compile_options(g4v_schema_engine PRIVATE -w)
  target_link_libraries(g4v_schema_engine PUBLIC g4v_jinja_engine)

  add_library(g4v_chat_schema STATIC ${PROJECT_SOURCE_DIR}/chat/chat_schema_grammar.cpp)
  set_target_properties(g4v_chat_schema PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON
                        CXX_EXTENSIONS OFF)
  target_include_directories(g4v_chat_schema PUBLIC ${PROJECT_SOURCE_DIR}/chat)
  target_link_libraries(g4v_chat_schema PRIVATE g4v_schema_engine)
  message(STATUS "g4v chat: JSON Schema -> grammar converter from ${G4V_LLAMA_SRC}/common")
endif()
