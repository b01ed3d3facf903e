#include <tokenradar/sim/trace_record.hpp>

#include <boost/json.hpp>

namespace tokenradar::sim {

TraceRecord TraceRecord::from_plan(const RequestPlan& plan, std::int64_t queue_wait_ns) {
    TraceRecord r;
    r.status = plan.fault.http_status();
    r.prompt_tokens = plan.prompt_tokens;
    r.cached_prompt_tokens = plan.cached_prompt_tokens;
    r.output_tokens = plan.output_tokens;
    r.queue_wait_ns = queue_wait_ns + plan.tail_wait_ns;
    r.tail_wait_ns = plan.tail_wait_ns;
    r.tail = plan.tail;
    r.ttft_ns = queue_wait_ns + plan.ttft_ns;
    r.peak_multiplier = plan.peak_multiplier;
    r.condition = plan.condition;
    r.chunk_offsets_ns.reserve(plan.chunks.size());
    r.chunk_tokens.reserve(plan.chunks.size());
    for (const Chunk& c : plan.chunks) {
        r.chunk_offsets_ns.push_back(c.offset_ns);
        r.chunk_tokens.push_back(c.token_count);
    }
    r.finish_reason = plan.fault.is_http_error() ? "" : std::string(to_string(plan.finish_reason));
    r.fault = plan.fault.kind;
    r.fault_at_token =
        plan.fault.kind == FaultKind::none || plan.fault.is_http_error() ? -1 : plan.fault.at_token;
    return r;
}

std::string TraceRecord::to_json_line() const {
    boost::json::object o;
    o["response_id"] = response_id;
    o["profile"] = profile;
    o["model"] = model;
    o["api"] = api;
    o["stream"] = stream;
    o["ts_us"] = ts_us;
    o["status"] = status;
    o["prompt_tokens"] = prompt_tokens;
    o["cached_prompt_tokens"] = cached_prompt_tokens;
    o["output_tokens"] = output_tokens;
    o["replica"] = replica;
    o["queue_wait_ns"] = queue_wait_ns;
    o["tail"] = tail;
    o["tail_wait_ns"] = tail_wait_ns;
    o["ttft_ns"] = ttft_ns;
    if (ttft_sent_ns >= 0) {
        o["ttft_sent_ns"] = ttft_sent_ns;
    } else {
        o["ttft_sent_ns"] = nullptr;
    }
    o["peak_multiplier"] = peak_multiplier;
    if (condition.normal()) {
        o["condition"] = nullptr;
    } else {
        o["condition"] = {{"ttft_multiplier", condition.ttft_multiplier},
                          {"tpot_multiplier", condition.tpot_multiplier},
                          {"error_rate", condition.error_rate}};
    }
    o["chunk_offsets_ns"] = boost::json::value_from(chunk_offsets_ns);
    o["chunk_tokens"] = boost::json::value_from(chunk_tokens);
    if (finish_reason.empty()) {
        o["finish_reason"] = nullptr;
    } else {
        o["finish_reason"] = finish_reason;
    }
    o["fault"] = to_string(fault);
    if (fault_at_token >= 0) {
        o["fault_at_token"] = fault_at_token;
    } else {
        o["fault_at_token"] = nullptr;
    }
    std::string line = boost::json::serialize(o);
    line.push_back('\n');
    return line;
}

}  // namespace tokenradar::sim
