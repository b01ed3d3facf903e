// `tokenradar keys`: create, list, rotate and revoke virtual client keys through a running
// gateway's admin API (gateway::run_keys_command). The admin key comes from the environment
// ($TOKENRADAR_ADMIN_KEY), never the command line, where `ps` would show it.

#include "commands.hpp"

#include <tokenradar/gateway/admin_client.hpp>
#include <tokenradar/keys/virtual_key.hpp>

#include <cstdio>
#include <cstdlib>
#include <memory>

namespace tokenradar::app {
namespace {

struct KeysArgs {
    std::string url = "http://127.0.0.1:8080";
    gateway::KeysCommand command;
    std::string period;
    std::string ca_file;
};

int run(const KeysArgs& args) {
    const char* admin_key = std::getenv("TOKENRADAR_ADMIN_KEY");
    if (admin_key == nullptr || *admin_key == '\0') {
        throw ConfigError(
            "keys: set TOKENRADAR_ADMIN_KEY to an admin key of the gateway ([[auth.admin_keys]])");
    }
    auto url = net::parse_url(args.url);
    if (!url) throw ConfigError("keys: --url: " + url.error().message);
    gateway::KeysCommand command = args.command;
    if (!args.period.empty()) {
        auto period = keys::parse_budget_period(args.period);
        if (!period) throw ConfigError("keys create: --period: expected day or month");
        command.spec.budget_period = *period;
    }
    if (command.spec.budget_tokens > 0 && command.spec.budget_period == keys::BudgetPeriod::none) {
        throw ConfigError("keys create: --budget needs --period day|month");
    }
    auto out = gateway::run_keys_command({*url, admin_key, args.ca_file}, command);
    if (!out) {
        std::fprintf(stderr, "tokenradar keys: %s\n", out.error().message.c_str());
        return 1;
    }
    std::fputs(out->c_str(), stdout);
    return 0;
}

}  // namespace

void register_keys(CLI::App& app, Runner& runner) {
    auto args = std::make_shared<KeysArgs>();
    CLI::App* sub = app.add_subcommand(
        "keys",
        "Virtual client keys of a running gateway (its admin API): create, list, "
        "rotate, revoke, audit");
    sub->require_subcommand(1);
    sub->add_option("--url", args->url, "The gateway")->capture_default_str();
    sub->add_option("--ca-file", args->ca_file, "Extra CA bundle for an https gateway");
    sub->add_flag("--json", args->command.json, "Print the admin API's JSON");
    using Action = gateway::KeysCommand::Action;
    const auto on = [args, &runner](CLI::App* cmd, Action action) {
        cmd->callback([args, &runner, action] {
            args->command.action = action;
            runner = [args] { return run(*args); };
        });
    };
    on(sub->add_subcommand("list", "Every key, with this period's requests and tokens"),
       Action::list);
    CLI::App* create = sub->add_subcommand("create", "A new key (printed once)");
    create->add_option("--name", args->command.spec.name, "Its label (dashboard, metrics)")
        ->required();
    create
        ->add_option("--models", args->command.spec.models,
                     "Virtual models it may use (default: all)")
        ->delimiter(',');
    create->add_option("--rpm", args->command.spec.rpm, "Requests per minute (0: no limit)");
    create->add_option("--tpm", args->command.spec.tpm, "Tokens per minute (0: no limit)");
    create->add_option("--budget", args->command.spec.budget_tokens,
                       "Tokens per --period (0: no budget)");
    create->add_option("--period", args->period, "The budget's period: day or month (UTC)");
    on(create, Action::create);
    CLI::App* rotate = sub->add_subcommand("rotate", "A new key for ID; the old one stops");
    rotate->add_option("id", args->command.id, "The key's id (key_...)")->required();
    on(rotate, Action::rotate);
    CLI::App* revoke = sub->add_subcommand("revoke", "Revoke ID for good");
    revoke->add_option("id", args->command.id, "The key's id (key_...)")->required();
    on(revoke, Action::revoke);
    CLI::App* audit = sub->add_subcommand("audit", "The newest admin actions");
    audit->add_option("--limit", args->command.limit, "How many (1-1000)")
        ->check(CLI::Range(1, 1000));
    on(audit, Action::audit);
}

}  // namespace tokenradar::app
