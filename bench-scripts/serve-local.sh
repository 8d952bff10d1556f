# serve-local.sh: sourced by the bench scripts that measure a `weft serve`
# with its local agent (turnover.sh, container-syscalls.sh).
#
# start_local_server BINARY PORT DIR starts it on 127.0.0.1:PORT with its
# data in DIR/data and its output in DIR/out and DIR/err, each property of
# WEFT_SET (KEY=VALUE, separated by spaces) passed as --set; sets $server
# to its pid at once (for the caller's trap, which stops it by that pid),
# and returns once it listens and its agent has had a second to register.
start_local_server() {
    local binary=$1 port=$2 dir=$3 property
    local settings=()
    for property in ${WEFT_SET:-}; do settings+=(--set "$property"); done
    "$binary" serve --listen "127.0.0.1:$port" --data-dir "$dir/data" "${settings[@]}" \
        >"$dir/out" 2>"$dir/err" &
    server=$!
    for _ in $(seq 100); do
        grep -q listening "$dir/out" 2>/dev/null && break
        sleep 0.1
    done
    sleep 1 # the local agent registers
}
