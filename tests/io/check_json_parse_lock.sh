#!/bin/sh
# check_json_parse_lock.sh SRC - every cJSON parse in the library and the front ends holds the
# lock that keeps cJSON's global error state race-free: the library's go through
# g4v_json_parse_text (src/io/json_file.c), the front ends' through fe_json_parse_text
# (common/frontend.c, which takes the same lock: g4v_json_lock in g4v.h). A cJSON_Parse*
# call anywhere else is a failure.
src=${1:?usage: check_json_parse_lock.sh SOURCE_DIR}
bad=$(grep -rn 'cJSON_Parse' "$src/src" "$src/tools" --include='*.c' --include='*.h' |
      grep -v '^[^:]*src/io/json_file\.[ch]:' | grep -v '^[^:]*common/frontend\.c:')
if [ -n "$bad" ]; then
    echo "cJSON parsed outside g4v_json_parse_text / fe_json_parse_text (take the lock):"
    echo "$bad"
    exit 1
fi
echo "check_json_parse_lock: every cJSON parse goes through g4v_json_parse_text or fe_json_parse_text"
