-- wrk: the same small non-streaming request bench sends (nonstream.toml). MODEL (env)
-- names another model (default gpt-4o).
local model = os.getenv("MODEL") or "gpt-4o"
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer sk-bench"
wrk.body = '{"model":"' .. model .. '","stream":false,"max_tokens":8,"messages":[{"role":"user","content":"ping 0123456789abcdef"}]}'
