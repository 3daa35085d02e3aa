/// What performs the page's API calls: the node's store and network, behind the front
/// door that has already checked who is asking (MemoCLI's `WebBackend`; a fake in tests).
///
/// Contract: `perform` is called from several of libmicrohttpd's threads at once, never
/// for a request that failed a check; it returns JSON in the command line's `--json`
/// shapes, and an error as `HTTPResponse.error`. It must not block for long: work that
/// takes seconds (a sync) runs in the background and is polled.
public protocol WebAPI: Sendable {
  func perform(_ call: APICall) -> HTTPResponse

  /// The node's change mark (`status`'s `changes`): what a waiting status call compares
  /// with the mark the page saw. Nil when there is none to tell (locked, no store): the
  /// call is answered at once.
  func changeMark() -> String?
}

extension WebAPI {
  public func changeMark() -> String? { nil }
}
