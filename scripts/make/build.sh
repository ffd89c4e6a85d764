#!/bin/sh
# build.sh - make build: configure + build into $BUILD (CMAKE_FLAGS, JOBS).
. scripts/make/lib.sh
configure "$BUILD" $CMAKE_FLAGS
compile "$BUILD"
