#include <tokenradar/sim/trace_record.hpp>

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace tokenradar::sim {
namespace {

TEST(TraceRecord, FromPlanAndJsonLine) {
    LatencyModel model(
        parse_profile("name = \"p\"\nmodels = [\"m\"]\n[ttft]\nbase_ms = 100\n"
                      "[decode]\ntokens_per_s = 50\ntokens_per_chunk = 2\n",
                      "p.toml"));
    PlanInput in;
    in.prompt_text = "hello world, this is a prompt";
    in.max_tokens = 5;
    in.request_seed = 1;
    const RequestPlan plan = model.plan(in);
    TraceRecord r = TraceRecord::from_plan(plan, 30'000'000);
    r.response_id = "chatcmpl-1";
    r.profile = "p";
    r.model = "m";
    r.api = "openai";
    EXPECT_EQ(r.ttft_ns, 130'000'000);
    const std::string line = r.to_json_line();
    ASSERT_EQ(line.back(), '\n');
    EXPECT_EQ(line.find('\n'), line.size() - 1);
    const auto v = boost::json::parse(line).as_object();
    EXPECT_EQ(v.at("response_id").as_string(), "chatcmpl-1");
    EXPECT_EQ(v.at("api").as_string(), "openai");
    EXPECT_EQ(v.at("status").as_int64(), 200);
    EXPECT_EQ(v.at("prompt_tokens").as_int64(), 8);
    EXPECT_EQ(v.at("output_tokens").as_int64(), 5);
    EXPECT_EQ(v.at("queue_wait_ns").as_int64(), 30'000'000);
    EXPECT_EQ(v.at("ttft_ns").as_int64(), 130'000'000);
    EXPECT_TRUE(v.at("ttft_sent_ns").is_null());  // filled when the first token goes out
    r.ttft_sent_ns = 130'400'000;
    EXPECT_EQ(boost::json::parse(r.to_json_line()).at("ttft_sent_ns").as_int64(), 130'400'000);
    EXPECT_EQ(v.at("chunk_offsets_ns").as_array().size(), 3u);
    EXPECT_EQ(v.at("chunk_offsets_ns").as_array()[1].as_int64(), 60'000'000);
    EXPECT_EQ(v.at("chunk_tokens").as_array()[2].as_int64(), 1);
    EXPECT_EQ(v.at("finish_reason").as_string(), "length");
    EXPECT_EQ(v.at("fault").as_string(), "none");
    EXPECT_TRUE(v.at("fault_at_token").is_null());
}

TEST(TraceRecord, HttpErrorFault) {
    LatencyModel model(parse_profile("name = \"p\"\nmodels = [\"m\"]\n", "p.toml"));
    PlanInput in;
    in.overrides.fault = FaultKind::http_503;
    TraceRecord r = TraceRecord::from_plan(model.plan(in), 0);
    EXPECT_EQ(r.status, 503);
    const auto v = boost::json::parse(r.to_json_line()).as_object();
    EXPECT_EQ(v.at("fault").as_string(), "503");
    EXPECT_TRUE(v.at("finish_reason").is_null());
}

TEST(TraceRecord, TailWaitIsQueueWaitAndTheConditionIsShown) {
    LatencyModel model(parse_profile(
        "name = \"p\"\nmodels = [\"m\"]\n[ttft]\nbase_ms = 100\n[tail]\nttft_multiplier = 5\n",
        "p.toml"));
    PlanInput in;
    in.max_tokens = 2;
    in.overrides.tail = TailMode::always;
    in.condition = Condition{2, 3, 0.5};
    RequestPlan plan;
    for (std::uint64_t seed = 0; seed < 64; ++seed) {  // the first the error_rate spares
        in.request_seed = seed;
        plan = model.plan(in);
        if (!plan.condition_error) break;
    }
    ASSERT_FALSE(plan.condition_error);
    TraceRecord r = TraceRecord::from_plan(plan, 30'000'000);
    r.replica = 2;
    // TTFT 100 ms x 2 (condition) = 200 ms; the tail adds 4 x 200 ms of queue wait.
    EXPECT_EQ(r.tail_wait_ns, 800'000'000);
    EXPECT_EQ(r.queue_wait_ns, 830'000'000);
    EXPECT_EQ(r.ttft_ns, 1'030'000'000);
    EXPECT_EQ(r.ttft_ns - r.queue_wait_ns, 200'000'000);
    const auto v = boost::json::parse(r.to_json_line()).as_object();
    EXPECT_TRUE(v.at("tail").as_bool());
    EXPECT_EQ(v.at("tail_wait_ns").as_int64(), 800'000'000);
    EXPECT_EQ(v.at("replica").as_int64(), 2);
    EXPECT_EQ(v.at("condition").at("ttft_multiplier").to_number<double>(), 2);
    EXPECT_EQ(v.at("condition").at("tpot_multiplier").to_number<double>(), 3);
    EXPECT_EQ(v.at("condition").at("error_rate").to_number<double>(), 0.5);

    in.overrides.tail = TailMode::never;
    in.condition = Condition{};
    const auto plain = boost::json::parse(TraceRecord::from_plan(model.plan(in), 0).to_json_line());
    EXPECT_FALSE(plain.at("tail").as_bool());
    EXPECT_EQ(plain.at("tail_wait_ns").as_int64(), 0);
    EXPECT_TRUE(plain.at("condition").is_null());
}

}  // namespace
}  // namespace tokenradar::sim
