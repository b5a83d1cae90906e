// Preloaded with `node --import` into npm servers started by the e2e tests:
// it binds every listen(port) to 127.0.0.1 (the tests never listen beyond
// loopback) and writes the bound port to $READY_FILE.
import fs from "node:fs";
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  const portOnly =
    (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) &&
    (args.length === 1 || typeof args[1] === "function");
  if (portOnly) {
    args.splice(1, 0, "127.0.0.1");
  }
  this.once("listening", () => {
    const addr = this.address();
    if (process.env.READY_FILE && addr && typeof addr === "object") {
      fs.writeFileSync(process.env.READY_FILE + ".tmp", String(addr.port));
      fs.renameSync(process.env.READY_FILE + ".tmp", process.env.READY_FILE);
    }
  });
  return listen.apply(this, args);
};
