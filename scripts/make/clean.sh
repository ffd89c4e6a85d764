#!/bin/sh
# clean.sh BUILD - make clean: remove every build directory.
rm -rf "${1:-build}" build-asan build-tsan build-fault build-fuzz build-cov
