-- load.lua - wrk script for scripts/load.sh: POST one image to /v1/encode, report percentiles.
local f = assert(io.open(os.getenv("G4V_LOAD_IMAGE"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.path = os.getenv("G4V_LOAD_PATH") or "/v1/encode?format=npy"
wrk.headers["Content-Type"] = "application/octet-stream"

local statuses = {}
response = function(status, headers, body)
   statuses[status] = (statuses[status] or 0) + 1
end

done = function(summary, latency, requests)
   local e = summary.errors
   io.write(string.format("load: %d requests in %.1f s = %.1f req/s; latency p50 %.2f ms, p90 %.2f ms, "
                          .. "p99 %.2f ms, max %.2f ms; errors: connect %d, read %d, write %d, "
                          .. "timeout %d, non-2xx %d\n",
                          summary.requests, summary.duration / 1e6,
                          summary.requests / (summary.duration / 1e6),
                          latency:percentile(50) / 1000, latency:percentile(90) / 1000,
                          latency:percentile(99) / 1000, latency.max / 1000,
                          e.connect, e.read, e.write, e.timeout, e.status))
end
