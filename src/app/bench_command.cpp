#include "commands.hpp"

#include <tokenradar/bench/extra_body.hpp>
#include <tokenradar/bench/report.hpp>
#include <tokenradar/bench/runner.hpp>
#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/config.hpp>
#include <tokenradar/core/duration.hpp>
#include <tokenradar/core/logging.hpp>
#include <tokenradar/core/resource_dir.hpp>
#include <tokenradar/core/version.hpp>
#include <tokenradar/observatory/submit.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>

namespace tokenradar::app {
namespace {

std::atomic<bool> g_stop{false};

extern "C" void on_interrupt(int) { g_stop.store(true); }

struct BenchArgs {
    std::string config;
    std::vector<std::string> targets;
    std::string workload;
    std::string workloads_dir;
    std::optional<std::size_t> requests;
    std::string duration;
    std::optional<std::size_t> concurrency;
    std::optional<double> rate;
    std::string arrival = "poisson";
    std::string ramp_up = "0s";
    std::size_t warmup = 0;
    std::uint64_t seed = 1;
    std::string out;
    std::string format = "table";
    std::vector<std::string> key_env;
    std::vector<std::string> headers;
    std::vector<std::string> extra_body;  // JSON (every target) or NAME=JSON (one target)
    std::string extra_body_source =
        "--extra-body";  // for messages: the option or the config file's key
    std::string connect_timeout = "10s";
    std::string first_token_timeout = "60s";
    std::string idle_timeout = "60s";
    std::string total_timeout = "10m";
    bool insecure = false;
    std::string ca_file;
    unsigned threads = 1;
    bool realtime = false;
    bool no_preflight = false;
    std::string submit;      // observatory URL
    std::string submit_key;  // or $TOKENRADAR_SUBMIT_KEY
    std::string command_line;
};

std::chrono::milliseconds duration_option(std::string_view option, const std::string& text) {
    auto parsed = parse_duration(text);
    if (!parsed) throw ConfigError(fmt::format("{}: {}", option, parsed.error().message));
    return std::chrono::duration_cast<std::chrono::milliseconds>(*parsed);
}

// Values from --config FILE fill what the command line left unset.
void apply_config_file(BenchArgs& a, const CLI::App& sub) {
    auto cfg = ConfigTable::load_file(a.config);
    cfg.reject_unknown_keys({"targets",
                             "workload",
                             "workloads_dir",
                             "requests",
                             "duration",
                             "concurrency",
                             "rate",
                             "arrival",
                             "ramp_up",
                             "warmup",
                             "seed",
                             "out",
                             "format",
                             "key_env",
                             "connect_timeout",
                             "first_token_timeout",
                             "idle_timeout",
                             "total_timeout",
                             "insecure",
                             "ca_file",
                             "threads",
                             "submit",
                             "extra_body",
                             "target_extra_body"});
    const auto unset = [&](const char* option) { return sub.count(option) == 0; };
    if (unset("--target")) a.targets = cfg.get_strings("targets");
    if (unset("--workload")) a.workload = cfg.get_string("workload", a.workload);
    if (unset("--workloads-dir"))
        a.workloads_dir = cfg.get_string("workloads_dir", a.workloads_dir);
    if (unset("--requests") && cfg.contains("requests")) {
        a.requests = static_cast<std::size_t>(cfg.get_integer("requests", 0, 1, 100'000'000));
    }
    if (unset("--duration")) a.duration = cfg.get_string("duration", a.duration);
    if (unset("--concurrency") && cfg.contains("concurrency")) {
        a.concurrency = static_cast<std::size_t>(cfg.get_integer("concurrency", 0, 1, 1'000'000));
    }
    if (unset("--rate") && cfg.contains("rate")) a.rate = cfg.get_number("rate", 0, 1e-6, 1e7);
    if (unset("--arrival")) a.arrival = cfg.get_string("arrival", a.arrival);
    if (unset("--ramp-up")) a.ramp_up = cfg.get_string("ramp_up", a.ramp_up);
    if (unset("--warmup"))
        a.warmup = static_cast<std::size_t>(cfg.get_integer("warmup", 0, 0, 1'000'000));
    if (unset("--seed"))
        a.seed = static_cast<std::uint64_t>(cfg.get_integer("seed", 1, 0, INT64_MAX));
    if (unset("--out")) a.out = cfg.get_string("out", a.out);
    if (unset("--format")) a.format = cfg.get_string("format", a.format);
    if (unset("--connect-timeout"))
        a.connect_timeout = cfg.get_string("connect_timeout", a.connect_timeout);
    if (unset("--first-token-timeout"))
        a.first_token_timeout = cfg.get_string("first_token_timeout", a.first_token_timeout);
    if (unset("--idle-timeout")) a.idle_timeout = cfg.get_string("idle_timeout", a.idle_timeout);
    if (unset("--total-timeout"))
        a.total_timeout = cfg.get_string("total_timeout", a.total_timeout);
    if (unset("--insecure")) a.insecure = cfg.get_bool("insecure", a.insecure);
    if (unset("--submit"))
        a.submit = cfg.get_string("submit", a.submit);  // the key: never in a file
    if (unset("--ca-file")) a.ca_file = cfg.get_string("ca_file", a.ca_file);
    if (unset("--threads")) a.threads = static_cast<unsigned>(cfg.get_integer("threads", 1, 1, 64));
    if (auto keys = cfg.table("key_env"); keys && unset("--key-env")) {
        for (const auto& name : keys->keys())
            a.key_env.push_back(name + "=" + keys->require_string(name));
    }
    // Either --extra-body replaces both tables, as --key-env replaces [key_env].
    if (unset("--extra-body")) {
        if (auto all = cfg.json_object("extra_body"))
            a.extra_body.push_back(boost::json::serialize(*all));
        if (auto by_target = cfg.table("target_extra_body")) {
            for (const auto& name : by_target->keys()) {
                a.extra_body.push_back(name + "=" +
                                       boost::json::serialize(*by_target->json_object(name)));
            }
        }
        if (!a.extra_body.empty())
            a.extra_body_source = a.config + ": extra_body/target_extra_body";
    }
}

// --extra-body JSON (every target) and --extra-body NAME=JSON (target NAME), each at most once:
// the target's fields go over the every-target ones (extra_body.hpp).
void apply_extra_body(const BenchArgs& a, std::vector<bench::Target>& targets) {
    const std::string& option = a.extra_body_source;
    std::optional<boost::json::object> all;
    std::map<std::string, boost::json::object> by_target;
    for (const auto& spec : a.extra_body) {
        const std::size_t start = spec.find_first_not_of(" \t\r\n");
        const bool named =
            start != std::string::npos && spec[start] != '{' && spec.find('=') != std::string::npos;
        const std::string name = named ? spec.substr(0, spec.find('=')) : std::string();
        const std::string json = named ? spec.substr(spec.find('=') + 1) : spec;
        auto parsed = bench::parse_extra_body(json);
        if (!parsed) {
            throw ConfigError(
                fmt::format("{} '{}': {} (expected a JSON object, e.g. '{{\"ignore_eos\": true}}', "
                            "or NAME=JSON for one target)",
                            option, spec, parsed.error().message));
        }
        if (!named) {
            if (all)
                throw ConfigError(
                    fmt::format("{}: a JSON object for every target is given twice", option));
            all = std::move(*parsed);
            continue;
        }
        const bool known = std::any_of(targets.begin(), targets.end(),
                                       [&](const auto& t) { return t.name == name; });
        if (!known)
            throw ConfigError(fmt::format("{} '{}': no target is named '{}'", option, spec, name));
        if (!by_target.emplace(name, std::move(*parsed)).second) {
            throw ConfigError(fmt::format("{}: target '{}' is given twice", option, name));
        }
    }
    for (auto& target : targets) {
        if (all) target.extra_body = *all;
        if (auto own = by_target.find(target.name); own != by_target.end()) {
            bench::overlay_extra_body(target.extra_body, own->second);
        }
    }
}

// --target specs, with keys from --key-env and each target's --extra-body.
std::vector<bench::Target> parse_targets(const BenchArgs& a) {
    std::vector<bench::Target> targets;
    if (a.targets.empty())
        throw ConfigError("--target: at least one target is required (NAME=API:BASE_URL#MODEL)");
    std::map<std::string, std::string> key_env;
    for (const auto& pair : a.key_env) {
        const auto eq = pair.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == pair.size()) {
            throw ConfigError(fmt::format("--key-env '{}': expected NAME=VAR", pair));
        }
        key_env[pair.substr(0, eq)] = pair.substr(eq + 1);
    }
    const bench::EnvLookup env = [](std::string_view name) -> std::optional<std::string> {
        const char* v = std::getenv(std::string(name).c_str());
        return v == nullptr ? std::nullopt : std::optional<std::string>(v);
    };
    for (const auto& spec : a.targets) {
        auto target = bench::parse_target(spec, key_env, env);
        if (!target) throw ConfigError(target.error().message);
        for (const auto& other : targets) {
            if (other.name == target->name)
                throw ConfigError(fmt::format("--target: the name '{}' is used twice", other.name));
        }
        if (target->key.empty() && target->base.tls()) {
            spdlog::warn("target {}: no key{} (use --key-env {}=VAR)", target->name,
                         target->key_env.empty() ? "" : " in $" + target->key_env, target->name);
        }
        targets.push_back(std::move(*target));
    }
    apply_extra_body(a, targets);
    return targets;
}

// How much to run: --requests per target or --duration.
void set_amount(const BenchArgs& a, bench::RunOptions& o) {
    if (a.requests.has_value() == !a.duration.empty()) {
        throw ConfigError(
            "give exactly one of --requests N (per target) or --duration TIME (e.g. 60s)");
    }
    if (a.requests) {
        if (*a.requests == 0) throw ConfigError("--requests: expected at least 1");
        o.requests = *a.requests;
    } else {
        o.duration = duration_option("--duration", a.duration);
        // The runner reads no requests and no duration as "until Ctrl-C".
        if (o.duration.count() <= 0)
            throw ConfigError("--duration: expected a positive duration (e.g. 60s)");
    }
}

// How requests arrive: closed loop (--concurrency, --ramp-up) or open loop (--rate, --arrival).
void set_load(const BenchArgs& a, bench::RunOptions& o) {
    if (a.concurrency.has_value() == a.rate.has_value()) {
        throw ConfigError(
            "give exactly one of --concurrency C (closed loop) or --rate R (open loop, "
            "requests/s)");
    }
    if (a.concurrency) {
        if (*a.concurrency == 0) throw ConfigError("--concurrency: expected at least 1");
        o.concurrency = *a.concurrency;
    } else {
        if (!(*a.rate > 0))
            throw ConfigError("--rate: expected a positive number of requests per second");
        o.rate = *a.rate;
    }
    auto arrival = bench::parse_arrival(a.arrival);
    if (!arrival)
        throw ConfigError(fmt::format("--arrival {}: expected poisson or constant", a.arrival));
    o.arrival = *arrival;
    o.ramp_up = duration_option("--ramp-up", a.ramp_up);
    if (o.ramp_up.count() > 0 && o.rate > 0)
        throw ConfigError("--ramp-up applies to --concurrency (closed loop) only");
}

// Timeouts, TLS, connection reuse and extra headers of the HTTP client.
void set_client(const BenchArgs& a, bench::RunOptions& o) {
    o.client.connect_timeout = duration_option("--connect-timeout", a.connect_timeout);
    o.first_token_timeout = duration_option("--first-token-timeout", a.first_token_timeout);
    o.client.headers_timeout = o.first_token_timeout;
    o.client.first_byte_timeout = o.first_token_timeout;
    o.client.idle_timeout = duration_option("--idle-timeout", a.idle_timeout);
    o.client.total_timeout = duration_option("--total-timeout", a.total_timeout);
    o.client.verify_tls = !a.insecure;
    o.client.ca_file = a.ca_file;
    o.client.max_idle_per_host = std::max<std::size_t>(64, o.concurrency);
    for (const auto& header : a.headers) {
        const auto colon = header.find(':');
        if (colon == std::string::npos || colon == 0) {
            throw ConfigError(fmt::format("--header '{}': expected 'Name: value'", header));
        }
        std::string value = header.substr(colon + 1);
        value.erase(0, value.find_first_not_of(' '));
        o.extra_headers.emplace_back(header.substr(0, colon), value);
    }
}

bench::RunOptions build_options(const BenchArgs& a) {
    bench::RunOptions o;
    o.targets = parse_targets(a);
    if (a.workload.empty())
        throw ConfigError(
            "--workload: required (chat, gen-500, long-context, code, prefix-reuse or a .toml "
            "file)");
    o.workload = bench::load_workload(a.workload, a.workloads_dir.empty()
                                                      ? find_resource_dir("workloads")
                                                      : std::filesystem::path(a.workloads_dir));
    set_amount(a, o);
    set_load(a, o);
    o.warmup = a.warmup;
    o.preflight = !a.no_preflight;
    o.seed = a.seed;
    o.threads = a.threads;
    set_client(a, o);
    if (a.format != "table" && a.format != "json" && a.format != "csv" && a.format != "markdown") {
        throw ConfigError(
            fmt::format("--format {}: expected table, json, csv or markdown", a.format));
    }
    return o;
}

boost::json::object summary_json(const BenchArgs& a, const bench::RunOptions& o,
                                 const bench::RunResult& r,
                                 const std::vector<bench::TargetReport>& reports,
                                 const std::string& started) {
    boost::json::object env;
    env["version"] = version();
    env["command_line"] = a.command_line;
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    env["host"] = host;
    env["start_time"] = started;
    env["threads"] = o.threads;
    env["realtime"] = a.realtime;
    boost::json::object run;
    run["workload"] = o.workload.name;
    run["task"] = o.workload.task;
    run["mode"] = o.rate > 0 ? "open" : "closed";
    if (o.rate > 0) {
        run["rate"] = o.rate;
        run["arrival"] = a.arrival;
    } else {
        run["concurrency"] = o.concurrency;
    }
    if (o.requests > 0) run["requests_per_target"] = o.requests;
    if (o.duration.count() > 0) run["duration_s"] = static_cast<double>(o.duration.count()) / 1e9;
    run["warmup"] = o.warmup;
    run["extra_body"] = o.workload.extra_body;  // the workload's; each target lists what it sent
    run["seed"] = o.seed;
    run["interrupted"] = r.interrupted;
    run["cancelled_in_flight"] = r.cancelled;
    run["wall_s"] = r.wall_s;
    run["cpu_s"] = r.cpu_s;
    run["peak_in_flight"] = r.peak_in_flight;
    boost::json::object lag;
    lag["p50"] = static_cast<double>(r.sched_lag_p50_ns) / 1e6;
    lag["p99"] = static_cast<double>(r.sched_lag_p99_ns) / 1e6;
    lag["max"] = static_cast<double>(r.sched_lag_max_ns) / 1e6;
    run["client_sched_lag_ms"] = std::move(lag);
    boost::json::array targets;
    for (std::size_t t = 0; t < reports.size(); ++t) {
        boost::json::object target = bench::to_json(reports[t]);
        if (t < o.targets.size())
            target["extra_body"] =
                bench::effective_extra_body(o.workload.extra_body, o.targets[t].extra_body);
        targets.push_back(std::move(target));
    }
    boost::json::object summary;
    summary["metrics_spec"] = kMetricsSpec;
    summary["environment"] = std::move(env);
    summary["run"] = std::move(run);
    summary["targets"] = std::move(targets);
    return summary;
}

void write_file(const std::string& path, const std::string& content) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) throw ConfigError(fmt::format("--out: cannot write {}", path));
}

// Where --submit sends the records, checked before the run so a typo costs no benchmark.
std::optional<observatory::SubmitTarget> submit_target(const BenchArgs& a) {
    if (a.submit.empty()) return std::nullopt;
    auto url = observatory::measurements_url(a.submit, "--submit");
    if (!url) throw ConfigError(url.error().message);
    std::string key = a.submit_key;
    if (key.empty()) {
        if (const char* env = std::getenv("TOKENRADAR_SUBMIT_KEY")) key = env;
    }
    return observatory::SubmitTarget{std::move(*url), Secret(std::move(key))};
}

// Posts the run's records to an observatory; 0, or 1 when they could not be delivered.
int submit_records(const observatory::SubmitTarget& target,
                   const net::ClientOptions& client_options, std::vector<Measurement> records) {
    net::asio::io_context io;
    net::HttpClient client(io.get_executor(), client_options);
    Result<observatory::SubmitOutcome> outcome =
        observatory::submit_records_blocking(io, client, target, std::move(records));
    if (!outcome) {
        spdlog::error("--submit: {}", outcome.error().message);
        return 1;
    }
    fmt::print(stderr, "submitted to {}: {} accepted, {} duplicates, {} rejected\n",
               target.url.authority(), outcome->accepted, outcome->duplicates, outcome->rejected);
    for (const std::string& e : outcome->errors) fmt::print(stderr, "  {}\n", e);
    return outcome->rejected > 0 ? 1 : 0;
}

int run(BenchArgs args, const CLI::App& sub) {
    if (!args.config.empty()) apply_config_file(args, sub);
    if (args.realtime) use_realtime_for_timing();  // before the lanes' threads start
    const bench::RunOptions options = build_options(args);
    const std::optional<observatory::SubmitTarget> submit = submit_target(args);
    const std::string started = rfc3339_utc(wall_now_us());

    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);

    const bool tty = isatty(STDERR_FILENO) != 0;
    const auto progress = [tty](const bench::Progress& p) {
        if (!tty) return;
        std::string medians;
        for (const auto& [name, ms] : p.ttft_p50_ms)
            medians += fmt::format("  {} {:.0f} ms", name, ms);
        fmt::print(stderr, "\r\033[Kdone {}  failed {}  in flight {}  elapsed {:.1f}s  TTFT p50:{}",
                   p.done, p.failed, p.in_flight, p.elapsed_s, medians);
        std::fflush(stderr);
    };

    bench::RunResult result;
    try {
        result = bench::run_bench(options, g_stop, progress);
    } catch (const bench::PreflightError& e) {
        throw ConfigError(e.what());
    }
    if (tty) fmt::print(stderr, "\n");

    std::vector<std::string> names;
    for (const auto& target : options.targets) names.push_back(target.name);
    std::vector<bench::TargetReport> reports = bench::summarize_targets(names, result.records);
    for (std::size_t t = 0; t < reports.size(); ++t) {
        const auto extra =
            bench::effective_extra_body(options.workload.extra_body, options.targets[t].extra_body);
        if (!extra.empty()) reports[t].extra_body = boost::json::serialize(extra);
    }

    if (args.format == "markdown") {
        std::fputs(bench::render_markdown(reports).c_str(), stdout);
    } else if (args.format == "csv") {
        std::fputs(bench::render_csv(reports).c_str(), stdout);
    } else if (args.format == "json") {
        std::puts(
            boost::json::serialize(summary_json(args, options, result, reports, started)).c_str());
    } else {
        std::fputs(bench::render_table(reports).c_str(), stdout);
        fmt::print(
            "run: {:.1f}s wall, {:.2f}s CPU, peak {} in flight, client scheduling lag p99 {:.2f} "
            "ms\n",
            result.wall_s, result.cpu_s, result.peak_in_flight, result.sched_lag_p99_ns / 1e6);
    }
    if (options.rate > 0 && result.sched_lag_p99_ns > 10'000'000) {
        spdlog::warn(
            "client scheduling lag p99 is {:.1f} ms: the client, not the server, is a bottleneck "
            "(use --threads, a lower --rate, or another machine)",
            result.sched_lag_p99_ns / 1e6);
    }
    if (result.cpu_s > 0.9 * result.wall_s * options.threads) {
        spdlog::warn("the client used {:.0f}% of its {} thread(s): it may be the bottleneck",
                     100 * result.cpu_s / result.wall_s, options.threads);
    }
    if (result.interrupted) {
        spdlog::warn(
            "interrupted: results so far; {} in-flight requests were cancelled and not counted",
            result.cancelled);
    }

    if (!args.out.empty()) {
        std::string lines;
        for (const auto& m : result.records) {
            lines += boost::json::serialize(to_json(m));
            lines += '\n';
        }
        write_file(args.out + ".jsonl", lines);
        write_file(
            args.out + ".summary.json",
            boost::json::serialize(summary_json(args, options, result, reports, started)) + "\n");
    }
    if (submit) return submit_records(*submit, options.client, std::move(result.records));
    return 0;
}

}  // namespace

void register_bench(CLI::App& app, Runner& runner, const std::string& command_line) {
    auto args = std::make_shared<BenchArgs>();
    CLI::App* sub = app.add_subcommand(
        "bench", "LLM latency benchmark: TTFT, tokens/s, E2E as metrics.md defines them");
    sub->add_option("--config", args->config,
                    "TOML file with the same settings (command line wins)");
    sub->add_option("--target", args->targets,
                    "NAME=API:BASE_URL#MODEL (API: openai, anthropic, gemini); repeatable");
    sub->add_option("--workload", args->workload,
                    "chat, gen-500, long-context, code, prefix-reuse, or a .toml file");
    sub->add_option("--workloads-dir", args->workloads_dir, "Where workload names are looked up");
    sub->add_option("--requests", args->requests, "Requests per target");
    sub->add_option("--duration", args->duration, "Run for this long instead (e.g. 60s, 5m)");
    sub->add_option("--concurrency", args->concurrency, "Closed loop: requests in flight");
    sub->add_option("--rate", args->rate, "Open loop: requests per second over all targets");
    sub->add_option("--arrival", args->arrival, "Open-loop arrivals: poisson or constant")
        ->capture_default_str();
    sub->add_option("--ramp-up", args->ramp_up,
                    "Closed loop: start the workers evenly over this time")
        ->capture_default_str();
    sub->add_option("--warmup", args->warmup, "Unrecorded requests per target before measuring")
        ->capture_default_str();
    sub->add_option("--seed", args->seed, "Seed for prompts, target order and arrivals")
        ->capture_default_str();
    sub->add_option("--out", args->out,
                    "Write PREFIX.jsonl (one record per request) and PREFIX.summary.json");
    sub->add_option("--format", args->format, "table, json, csv or markdown")
        ->capture_default_str();
    sub->add_option("--key-env", args->key_env,
                    "NAME=VAR: read target NAME's key from $VAR; repeatable");
    sub->add_option(
        "--extra-body", args->extra_body,
        "JSON object merged into every request body, e.g. '{\"ignore_eos\":true}'; NAME=JSON: "
        "for target NAME only (over the every-target one and the workload's [extra_body]); "
        "may not change fields bench sets");
    sub->add_option("--header", args->headers,
                    "Extra request header 'Name: value' (e.g. x-sim-* for the sim)");
    sub->add_option("--connect-timeout", args->connect_timeout, "TCP + TLS connect timeout")
        ->capture_default_str();
    sub->add_option("--first-token-timeout", args->first_token_timeout, "Send to first token")
        ->capture_default_str();
    sub->add_option("--idle-timeout", args->idle_timeout, "Longest silence between chunks")
        ->capture_default_str();
    sub->add_option("--total-timeout", args->total_timeout, "Whole request")->capture_default_str();
    sub->add_flag("--insecure", args->insecure, "Do not verify TLS certificates");
    sub->add_option("--ca-file", args->ca_file, "Extra CA bundle (PEM) to trust");
    sub->add_option("--threads", args->threads, "Client I/O threads")->capture_default_str();
    sub->add_flag("--realtime", args->realtime,
                  "Run the client threads under real-time scheduling (SCHED_FIFO; needs root or "
                  "CAP_SYS_NICE) "
                  "so other processes on a busy machine cannot delay a timestamp");
    sub->add_flag("--no-preflight", args->no_preflight,
                  "Skip the unrecorded reachability request per target");
    sub->add_option("--submit", args->submit,
                    "After the run, send the records to this observatory (http://host:port or its "
                    "/api/v1/measurements URL)");
    sub->add_option(
        "--submit-key", args->submit_key,
        "Ingest key for --submit (or $TOKENRADAR_SUBMIT_KEY, which keeps it out of ps)");
    args->command_line = command_line;
    sub->callback([args, sub, &runner] { runner = [args, sub] { return run(*args, *sub); }; });
}

}  // namespace tokenradar::app
