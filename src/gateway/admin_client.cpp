#include <tokenradar/gateway/admin_client.hpp>

#include <tokenradar/core/text_table.hpp>
#include <tokenradar/keys/key_spec.hpp>
#include <tokenradar/net/http_client.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/format.h>

#include <future>

namespace tokenradar::gateway {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;

net::asio::awaitable<Result<net::HttpClient::Response>> call(net::HttpClient* client,
                                                             http::verb method, net::Url url,
                                                             net::RequestHeaders headers,
                                                             std::string body) {
    auto answer = co_await client->request(method, url, headers, std::move(body), 64 << 20);
    co_return answer;
}

Result<json::value> call_api(const AdminTarget& target, http::verb method, std::string_view path,
                             std::string body) {
    net::Url url = target.base;
    while (!url.target.empty() && url.target.back() == '/') url.target.pop_back();
    url.target += path;
    net::RequestHeaders headers{{"authorization", "Bearer " + target.admin_key}};
    if (!body.empty()) headers.emplace_back("content-type", "application/json");
    net::asio::io_context ioc(1);
    net::ClientOptions options;
    options.ca_file = target.ca_file;
    net::HttpClient client(ioc.get_executor(), options);
    auto future = net::asio::co_spawn(
        ioc, call(&client, method, std::move(url), std::move(headers), std::move(body)),
        net::asio::use_future);
    ioc.run();
    auto answer = future.get();
    if (!answer) {
        return Error(answer.error().code,
                     fmt::format("{}: {}", target.base.authority(), answer.error().message));
    }
    boost::system::error_code ec;
    json::value doc = json::parse(answer->body, ec);
    if (answer->status >= 300) {
        std::string message = answer->body.substr(0, 512);
        if (const auto* o = doc.if_object(); !ec && o != nullptr) {
            if (const auto* e = o->if_contains("error"); e != nullptr && e->is_object()) {
                if (const auto* m = e->as_object().if_contains("message"); m && m->is_string()) {
                    message = std::string(m->as_string());
                }
            }
        }
        const Errc code = answer->status == 401   ? Errc::unauthorized
                          : answer->status == 404 ? Errc::not_found
                                                  : Errc::bad_request;
        return Error(code, fmt::format("HTTP {}: {}", answer->status, message));
    }
    if (ec) return Error(Errc::protocol_error, "the admin API's answer is not JSON");
    return doc;
}

std::string text(const json::value& v) {
    if (const auto* s = v.if_string()) return std::string(*s);
    if (v.is_null()) return "-";
    return json::serialize(v);
}

std::string number(const json::object& o, std::string_view field) {
    const json::value* v = o.if_contains(field);
    if (v == nullptr) return "-";
    if (const auto* i = v->if_int64()) return *i == 0 ? "-" : std::to_string(*i);
    return text(*v);
}

std::string models_text(const json::object& o) {
    const json::value* v = o.if_contains("models");
    if (v == nullptr || !v->is_array() || v->as_array().empty()) return "all";
    std::string out;
    for (const auto& m : v->as_array()) {
        if (!out.empty()) out += ',';
        out += text(m);
    }
    return out;
}

std::string keys_table(const json::value& doc) {
    TextTable table({{"id", TextTable::Align::left},
                     {"name", TextTable::Align::left},
                     {"models", TextTable::Align::left},
                     {"rpm"},
                     {"tpm"},
                     {"budget"},
                     {"used"},
                     {"requests"},
                     {"created", TextTable::Align::left},
                     {"state", TextTable::Align::left}});
    const json::value* data = doc.is_object() ? doc.as_object().if_contains("data") : nullptr;
    if (data != nullptr && data->is_array()) {
        for (const auto& item : data->as_array()) {
            if (!item.is_object()) continue;
            const json::object& k = item.as_object();
            std::string budget = number(k, "budget_tokens");
            if (budget != "-") budget += "/" + text(k.at("budget_period"));
            std::string used = "-";
            std::string requests = "-";
            if (const auto* u = k.if_contains("usage"); u != nullptr && u->is_object()) {
                used = fmt::format("{}/{}", text(u->as_object().at("tokens")),
                                   text(u->as_object().at("period")));
                requests = text(u->as_object().at("requests"));
            }
            const json::value* revoked = k.if_contains("revoked_at");
            table.add_row({text(k.at("id")), text(k.at("name")), models_text(k), number(k, "rpm"),
                           number(k, "tpm"), budget, used, requests,
                           text(k.at("created_at")).substr(0, 16),
                           revoked != nullptr && !revoked->is_null()
                               ? "revoked " + text(*revoked).substr(0, 16)
                               : "active"});
        }
    }
    return table.render_aligned();
}

std::string issued_text(const json::value& doc, std::string_view verb) {
    const json::object& k = doc.as_object();
    return fmt::format(
        "{} key {} ({}): models {}, rpm {}, tpm {}, budget {}\n"
        "key: {}\n"
        "Shown once: store it now (the gateway keeps only its SHA-256).\n",
        verb, text(k.at("id")), text(k.at("name")), models_text(k), number(k, "rpm"),
        number(k, "tpm"),
        number(k, "budget_tokens") == "-"
            ? std::string("-")
            : number(k, "budget_tokens") + " tokens per " + text(k.at("budget_period")),
        text(k.at("key")));
}

std::string audit_table(const json::value& doc) {
    TextTable table({{"at", TextTable::Align::left},
                     {"actor", TextTable::Align::left},
                     {"action", TextTable::Align::left},
                     {"key", TextTable::Align::left},
                     {"detail", TextTable::Align::left}});
    const json::value* data = doc.is_object() ? doc.as_object().if_contains("data") : nullptr;
    if (data != nullptr && data->is_array()) {
        for (const auto& item : data->as_array()) {
            if (!item.is_object()) continue;
            const json::object& a = item.as_object();
            const json::value* detail = a.if_contains("detail");
            const bool empty =
                detail == nullptr || (detail->is_object() && detail->as_object().empty());
            table.add_row({text(a.at("at")), text(a.at("actor")), text(a.at("action")),
                           text(a.at("key_id")), empty ? "" : json::serialize(*detail)});
        }
    }
    return table.render_aligned();
}

}  // namespace

Result<std::string> run_keys_command(const AdminTarget& target, const KeysCommand& command) {
    using Action = KeysCommand::Action;
    Result<json::value> doc = Error(Errc::internal, "no action");
    switch (command.action) {
        case Action::list:
            doc = call_api(target, http::verb::get, "/admin/v1/keys", {});
            break;
        case Action::create:
            doc = call_api(target, http::verb::post, "/admin/v1/keys",
                           keys::key_spec_json(command.spec));
            break;
        case Action::rotate:
            doc =
                call_api(target, http::verb::post, "/admin/v1/keys/" + command.id + "/rotate", {});
            break;
        case Action::revoke:
            doc =
                call_api(target, http::verb::post, "/admin/v1/keys/" + command.id + "/revoke", {});
            break;
        case Action::audit:
            doc = call_api(target, http::verb::get,
                           "/admin/v1/audit?limit=" + std::to_string(command.limit), {});
            break;
    }
    if (!doc) return doc.error();
    if (command.json) return json::serialize(*doc) + "\n";
    switch (command.action) {
        case Action::list:
            return keys_table(*doc);
        case Action::create:
            return issued_text(*doc, "created");
        case Action::rotate:
            return issued_text(*doc, "rotated");
        case Action::revoke:
            return fmt::format("revoked key {} ({})\n", text(doc->as_object().at("id")),
                               text(doc->as_object().at("name")));
        case Action::audit:
            return audit_table(*doc);
    }
    return std::string();
}

}  // namespace tokenradar::gateway
