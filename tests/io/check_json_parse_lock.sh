#!/bin/sh
# check_json_parse_lock.sh SRC - every cJSON parse in the library and the CLI goes through
# g4v_json_parse_text (src/io/json_file.c), which holds the lock that keeps cJSON's global error
# state race-free. A cJSON_Parse* call anywhere else is a failure.
src=${1:?usage: check_json_parse_lock.sh SOURCE_DIR}
bad=$(grep -rn 'cJSON_Parse' "$src/src" "$src/tools" --include='*.c' --include='*.h' |
      grep -v '^[^:]*src/io/json_file\.[ch]:')
if [ -n "$bad" ]; then
    echo "cJSON parsed outside g4v_json_parse_text (take the lock: src/io/json_file.c):"
    echo "$bad"
    exit 1
fi
echo "check_json_parse_lock: every cJSON parse goes through g4v_json_parse_text"
