#!/bin/sh
# fault.sh - make fault: hostile input (docs/LIMITS.md): the N-th allocation fails for every N
# over load and encode, decompression bombs, and the fuzz regression replays, under ASan/LSan +
# UBSan (build-fault/). Optimised (RelWithDebInfo) so the sweeps stay fast. Only the programs of
# those tests (FAULT_TESTS) are built.
. scripts/make/lib.sh
FAULT_TESTS=${FAULT_TESTS:-test_fault_bombs test_fault_alloc fuzz_safetensors_replay \
fuzz_gguf_replay fuzz_config_replay fuzz_index_replay fuzz_image_replay fuzz_encode_replay \
fuzz_video_replay fuzz_serve_replay fuzz_chat_request_replay fuzz_hub_listing_replay \
fuzz_hub_header_replay}
configure build-fault -DCMAKE_BUILD_TYPE=RelWithDebInfo -DG4V_SANITIZE=ON \
    -DG4V_FAULT_INJECTION=ON -DG4V_WERROR=ON
compile build-fault $FAULT_TESTS
cd build-fault && ctest --output-on-failure -j "$JOBS" -L fault
