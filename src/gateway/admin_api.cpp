// The admin API (README "Keys, limits and budgets"): /admin/v1/keys and /admin/v1/audit,
// answered only for an admin key ([[auth.admin_keys]]); a client key is never one.
//
//   GET    /admin/v1/keys                  every key (revoked too), with this period's usage
//   POST   /admin/v1/keys                  create: {"name", "models", "rpm", "tpm",
//                                          "budget_tokens", "budget_period"} -> 201 with "key"
//   POST   /admin/v1/keys/{id}/rotate      a new key for the same id (the old one stops at once
//                                          here, within [auth] refresh on other nodes)
//   POST   /admin/v1/keys/{id}/revoke      (or DELETE /admin/v1/keys/{id})
//   GET    /admin/v1/audit?limit=N         the newest admin actions (default 100, at most 1000)

#include "gateway_impl.hpp"
#include "key_book.hpp"

#include <tokenradar/keys/key_spec.hpp>
#include <tokenradar/net/api_keys.hpp>

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url/parse.hpp>
#include <fmt/format.h>

#include <charconv>

namespace tokenradar::gateway {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;

constexpr std::string_view kKeysPath = "/admin/v1/keys";
constexpr std::string_view kAuditPath = "/admin/v1/audit";

// The key with its secret, shown once: the answer to create and rotate.
std::string issued_body(const IssuedKey& issued) {
    json::object o = json::parse(key_object_json(issued.key)).as_object();
    o["key"] = issued.secret;
    o["note"] = "the key is shown once: store it now";
    return json::serialize(o);
}

std::optional<std::size_t> limit_param(std::string_view target) {
    const auto q = target.find('?');
    if (q == std::string_view::npos) return 100;
    auto parsed = boost::urls::parse_origin_form(target);
    if (!parsed) return std::nullopt;
    std::size_t limit = 100;
    for (const auto& p : parsed->params()) {
        if (p.key != "limit") return std::nullopt;
        const std::string& v = p.value;
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), limit);
        if (ec != std::errc() || end != v.data() + v.size() || limit < 1 || limit > 1000) {
            return std::nullopt;
        }
    }
    return limit;
}

awaitable<void> send_json(net::ResponseWriter& writer, http::status status, std::string body,
                          net::HeaderList& headers) {
    headers.emplace_back("cache-control", "no-store");
    co_await writer.send(status, "application/json", std::move(body), headers);
}

}  // namespace

awaitable<void> handle_admin(Gateway::Impl& gw, net::Request& request, net::ResponseWriter& writer,
                             net::HeaderList headers, std::string_view path) {
    if (gw.config.admin_keys.empty() || !gw.keys) {
        co_await send_error(gw, writer, Errc::not_found,
                            "the admin API is off: set [[auth.admin_keys]] (README \"Keys, limits "
                            "and budgets\")",
                            std::move(headers));
        co_return;
    }
    const auto auth = request.find(http::field::authorization);
    const auto admin = auth == request.end()
                           ? std::nullopt
                           : net::find_bearer_key(auth->value(), gw.config.admin_keys);
    if (!admin) {
        co_await send_error(gw, writer, Errc::unauthorized,
                            "missing or unknown admin key: send Authorization: Bearer <an "
                            "[[auth.admin_keys]] key>",
                            std::move(headers));
        co_return;
    }
    std::string actor = gw.config.admin_keys[*admin].name;
    const auto method = request.method();
    const bool get = method == http::verb::get || method == http::verb::head;
    const bool post = method == http::verb::post;

    if (path == kAuditPath) {
        if (!get) {
            co_await send_error(gw, writer, Errc::method_not_allowed, "use GET",
                                std::move(headers));
            co_return;
        }
        const auto limit = limit_param(request.target());
        if (!limit) {
            co_await send_error(gw, writer, Errc::bad_request,
                                "query: expected only limit=N, N from 1 to 1000",
                                std::move(headers));
            co_return;
        }
        auto body = co_await gw.keys->audit_json(*limit);
        if (!body) {
            co_await send_error(gw, writer, errc_of(body.error(), Errc::internal),
                                body.error().message, std::move(headers));
            co_return;
        }
        co_await send_json(writer, http::status::ok, std::move(*body), headers);
        co_return;
    }
    if (path == kKeysPath) {
        if (get) {
            auto body = co_await gw.keys->list_json();
            if (!body) {
                co_await send_error(gw, writer, errc_of(body.error(), Errc::internal),
                                    body.error().message, std::move(headers));
                co_return;
            }
            co_await send_json(writer, http::status::ok, std::move(*body), headers);
            co_return;
        }
        if (!post) {
            co_await send_error(gw, writer, Errc::method_not_allowed, "use GET or POST",
                                std::move(headers));
            co_return;
        }
        if (!is_json_body(request)) {
            co_await send_error(gw, writer, Errc::unsupported_media_type,
                                "Content-Type: expected application/json", std::move(headers));
            co_return;
        }
        auto spec = keys::parse_key_spec(request.body());
        if (!spec) {
            co_await send_error(gw, writer, Errc::bad_request, spec.error().message,
                                std::move(headers));
            co_return;
        }
        auto op = gw.keys->create(std::move(*spec), std::move(actor));
        auto issued = co_await std::move(op);
        if (!issued) {
            co_await send_error(gw, writer, errc_of(issued.error(), Errc::internal),
                                issued.error().message, std::move(headers));
            co_return;
        }
        co_await send_json(writer, http::status::created, issued_body(*issued), headers);
        co_return;
    }
    // /admin/v1/keys/{id}[/rotate|/revoke]
    std::string_view rest = path.starts_with(kKeysPath) && path.size() > kKeysPath.size() &&
                                    path[kKeysPath.size()] == '/'
                                ? path.substr(kKeysPath.size() + 1)
                                : std::string_view();
    const auto slash = rest.find('/');
    const std::string id(rest.substr(0, slash));
    const std::string_view action =
        slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    if (!keys::is_key_id(id) || (!action.empty() && action != "rotate" && action != "revoke")) {
        co_await send_error(gw, writer, Errc::not_found,
                            fmt::format("no admin route for {}", path.substr(0, 256)),
                            std::move(headers));
        co_return;
    }
    const bool revoke =
        (action.empty() && method == http::verb::delete_) || (action == "revoke" && post);
    const bool rotate = action == "rotate" && post;
    if (!revoke && !rotate) {
        co_await send_error(gw, writer, Errc::method_not_allowed,
                            action.empty() ? "use DELETE (revoke), or POST .../rotate" : "use POST",
                            std::move(headers));
        co_return;
    }
    if (rotate) {
        auto op = gw.keys->rotate(id, std::move(actor));
        auto issued = co_await std::move(op);
        if (!issued) {
            co_await send_error(gw, writer, errc_of(issued.error(), Errc::internal),
                                issued.error().message, std::move(headers));
            co_return;
        }
        co_await send_json(writer, http::status::ok, issued_body(*issued), headers);
        co_return;
    }
    auto op = gw.keys->revoke(id, std::move(actor));
    auto revoked = co_await std::move(op);
    if (!revoked) {
        co_await send_error(gw, writer, errc_of(revoked.error(), Errc::internal),
                            revoked.error().message, std::move(headers));
        co_return;
    }
    co_await send_json(writer, http::status::ok, key_object_json(*revoked), headers);
}

}  // namespace tokenradar::gateway
