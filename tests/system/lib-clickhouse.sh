# ClickHouse servers for the tests and the benchmark: Debian's
# clickhouse-server started as a plain process, listening on 127.0.0.1
# only, on free ports, with its configuration, data and logs in a
# directory of its own, stopped at exit (also on failure). All servers
# started by one script form the cluster `stackmapd` of
# clickhouse/schema.sql, one shard each. (Debian's own
# /etc/clickhouse-server/config.xml listens on ::1 and 127.0.0.1 at the
# fixed ports 8123, 9000 and 9009 with its data in /var/lib/clickhouse, and
# its users.xml lets the default user in from anywhere: neither is used.)
# Source it after tests/lib.sh:  . "$top_srcdir/tests/system/lib-clickhouse.sh"

need_clickhouse() {
	need_cmd clickhouse-server
	need_cmd clickhouse-client
	need_cmd curl
	need_cmd python3
}

# A TCP port that is free on 127.0.0.1 now.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# ch_servers DIR N: start N servers (DIR/ch1 ... DIR/chN), the shards of the
# cluster `stackmapd`, wait until each answers, and create the schema in
# each. Sets CH_TCP and CH_HTTP (arrays of their ports, from index 1).
CH_TCP=() CH_HTTP=()
ch_servers() {
	local dir=$1 n=$2 i shards=
	for ((i = 1; i <= n; i++)); do
		CH_TCP[i]=$(free_port)
		CH_HTTP[i]=$(free_port)
		shards+="<shard><replica><host>127.0.0.1</host><port>${CH_TCP[i]}</port></replica></shard>"
	done
	for ((i = 1; i <= n; i++)); do
		_ch_start "$dir/ch$i" "${CH_TCP[i]}" "${CH_HTTP[i]}" "$shards"
	done
	for ((i = 1; i <= n; i++)); do
		wait_until 60 curl -sf -o /dev/null "http://127.0.0.1:${CH_HTTP[i]}/ping" || {
			tail -20 "$dir/ch$i/server.err.log" "$dir/ch$i/stdout" >&2
			fail "clickhouse-server $i did not answer within 60 s"
		}
		clickhouse-client --port "${CH_TCP[i]}" --multiquery < "$top_srcdir/clickhouse/schema.sql" ||
			fail "the schema does not load into server $i"
	done
}

_ch_start() {
	local d=$1 tcp=$2 http=$3 shards=$4
	mkdir -p "$d/data" "$d/tmp" "$d/user_files" "$d/format_schemas"
	cat > "$d/users.xml" <<EOF
<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
  <users><default>
    <password></password>
    <networks><ip>127.0.0.1</ip></networks>
    <profile>default</profile><quota>default</quota>
  </default></users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors>
    <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time>
  </interval></default></quotas>
</yandex>
EOF
	cat > "$d/config.xml" <<EOF
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$d/server.log</log><errorlog>$d/server.err.log</errorlog>
    <size>10M</size><count>1</count></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>$http</http_port>
  <tcp_port>$tcp</tcp_port>
  <path>$d/data/</path>
  <tmp_path>$d/tmp/</tmp_path>
  <user_files_path>$d/user_files/</user_files_path>
  <format_schema_path>$d/format_schemas/</format_schema_path>
  <users_config>$d/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>268435456</mark_cache_size>
  <max_concurrent_queries>20</max_concurrent_queries>
  <remote_servers><stackmapd>$shards</stackmapd></remote_servers>
</yandex>
EOF
	clickhouse-server --config-file="$d/config.xml" > "$d/stdout" 2>&1 &
	echo $! > "$d/pid"
	at_exit "ch_stop '$d'"
}

# ch_stop DIR: stop the server of DIR, at most 20 s politely, then for good.
ch_stop() {
	local pid
	pid=$(cat "$1/pid" 2>/dev/null) || return 0
	kill "$pid" 2>/dev/null
	wait_until 20 sh -c "! kill -0 $pid 2>/dev/null" || kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	rm -f "$1/pid"
}

# chq N QUERY: run a query on server N, tab-separated output.
chq() { clickhouse-client --port "${CH_TCP[$1]}" --query "$2"; }
