// Preloaded with `node --require report_port.cjs server.js` (see listening.py): every TCP server
// in this process, once listening, writes "LISTENING <port>" to standard error, so tests can start
// a Node server with PORT=0 and learn the port the kernel gave it.
"use strict";
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  this.once("listening", () => {
    const address = this.address();
    if (address && typeof address === "object") process.stderr.write(`LISTENING ${address.port}\n`);
  });
  return listen.apply(this, args);
};
