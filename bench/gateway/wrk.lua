-- wrk: sends the request of another benchmark's script (REQUEST_SCRIPT, e.g.
-- bench/client/nonstream.lua or bench/sim/stream.lua), adds Portkey's routing headers when
-- PORTKEY_HOST is set, and prints one machine-readable line with exact figures (wrk's own
-- summary rounds latencies to two digits).
dofile(os.getenv("REQUEST_SCRIPT"))
local portkey_host = os.getenv("PORTKEY_HOST")
if portkey_host then
    wrk.headers["x-portkey-provider"] = "openai"
    wrk.headers["x-portkey-custom-host"] = portkey_host
end

function done(summary, latency, requests)
    local e = summary.errors
    io.write(string.format(
        "RESULT requests=%d duration_us=%d p50_us=%d p99_us=%d errors=%d non2xx=%d\n",
        summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
        e.connect + e.read + e.write + e.timeout, e.status))
end
