# Finds the system libraries libg4v needs and, if any is missing, stops with one message that
# names every missing package and the command that installs them.
find_package(PkgConfig)
find_package(Threads REQUIRED)

set(_g4v_missing "")
if(NOT PKG_CONFIG_FOUND)
  list(APPEND _g4v_missing "pkg-config")
else()
  pkg_check_modules(JPEG IMPORTED_TARGET libjpeg)
  pkg_check_modules(PNG IMPORTED_TARGET libpng)
  pkg_check_modules(WEBP IMPORTED_TARGET libwebp)
  pkg_check_modules(WEBPDEMUX IMPORTED_TARGET libwebpdemux) # first frame as Pillow: WebPAnimDecoder
  pkg_check_modules(CJSON IMPORTED_TARGET libcjson)
  pkg_check_modules(MHD IMPORTED_TARGET libmicrohttpd>=0.9.71) # g4v serve (the CLI only)
  if(NOT JPEG_FOUND)
    list(APPEND _g4v_missing "libjpeg62-turbo-dev")
  endif()
  if(NOT PNG_FOUND)
    list(APPEND _g4v_missing "libpng-dev")
  endif()
  if(NOT WEBP_FOUND OR NOT WEBPDEMUX_FOUND)
    list(APPEND _g4v_missing "libwebp-dev")
  endif()
  if(NOT CJSON_FOUND)
    list(APPEND _g4v_missing "libcjson-dev")
  endif()
  if(NOT MHD_FOUND)
    list(APPEND _g4v_missing "libmicrohttpd-dev")
  endif()
endif()

# giflib ships no pkg-config file on Debian 12.
find_path(GIF_INCLUDE_DIR gif_lib.h)
find_library(GIF_LIBRARY gif)
if(NOT GIF_INCLUDE_DIR OR NOT GIF_LIBRARY)
  list(APPEND _g4v_missing "libgif-dev")
else()
  add_library(G4V::GIF UNKNOWN IMPORTED)
  set_target_properties(G4V::GIF PROPERTIES IMPORTED_LOCATION ${GIF_LIBRARY}
                        INTERFACE_INCLUDE_DIRECTORIES ${GIF_INCLUDE_DIR})
endif()

if(_g4v_missing)
  list(JOIN _g4v_missing " " _g4v_missing_str)
  message(FATAL_ERROR "gemma4-vision: missing build dependencies: ${_g4v_missing_str}\n"
          "Install them with:  sudo scripts/install-deps.sh   (or: apt-get install ${_g4v_missing_str})")
endif()
