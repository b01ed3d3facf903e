-- wrk: the same small non-streaming request bench sends (nonstream.toml).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer sk-bench"
wrk.body = '{"model":"gpt-4o","stream":false,"max_tokens":8,"messages":[{"role":"user","content":"ping 0123456789abcdef"}]}'
