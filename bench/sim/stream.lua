-- wrk script: one streaming OpenAI chat completion per request against the sim.
-- MAX_TOKENS (env) sets the tokens (= chunks with tokens_per_chunk 1) per stream.
local max_tokens = os.getenv("MAX_TOKENS") or "100"
-- MODEL (env) names another model (default gpt-4o).
local model = os.getenv("MODEL") or "gpt-4o"
-- TOKENS_PER_CHUNK (env) overrides the profile's chunking through the sim's test header.
local tokens_per_chunk = os.getenv("TOKENS_PER_CHUNK")
if tokens_per_chunk then wrk.headers["x-sim-tokens-per-chunk"] = tokens_per_chunk end
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer sk-bench"
wrk.body = '{"model":"' .. model .. '","stream":true,"max_tokens":' .. max_tokens ..
           ',"messages":[{"role":"user","content":"benchmark the simulator"}]}'
