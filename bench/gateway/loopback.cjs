// Preloaded into Portkey's gateway (node --require): its start-server.js has no host option
// and listens on every interface, while the benchmark binds everything to 127.0.0.1. A
// listen(port, undefined, ...) becomes listen(port, "127.0.0.1", ...).
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
    if (typeof args[0] === "number" && (args[1] === undefined || typeof args[1] === "function")) {
        if (args[1] === undefined) args[1] = "127.0.0.1";
        else args.splice(1, 0, "127.0.0.1");
    }
    return listen.apply(this, args);
};
