public import NIOHTTP1

extension HTTPResponseHead {
    /// This head with its `Connection` header saying whether the connection stays open,
    /// in the form the response's HTTP version needs.
    public func keepingAlive(_ keepAlive: Bool) -> HTTPResponseHead {
        var head = self
        head.headers.remove(name: "connection")
        if !keepAlive {
            head.headers.add(name: "Connection", value: "close")
        } else if version.major == 1 && version.minor == 0 {
            head.headers.add(name: "Connection", value: "keep-alive")
        }
        return head
    }
}

extension HTTPRequestHead {
    /// Whether an HTTP/1.x client wants its connection kept open after the response. Not after a
    /// request asking for an upgrade that is not tunnelled: the parser stops at such a request.
    public var clientKeepAlive: Bool { isKeepAlive && !headers.contains(name: "upgrade") }
}
