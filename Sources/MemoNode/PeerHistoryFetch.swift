import MemoCore
import MemoProtocol

/// `history --from` over a ready link (`HistoryExchange`): one `history-ask`, the relay's
/// `history-records` frames until the last, then goodbye. Blocking: run it on a thread of
/// its own (`BlockingIO`).
public enum PeerHistoryFetch {
  /// What the relay sent, checked as an answer to the ask (not yet as records: the store
  /// does that); throws when the peer does not answer as the exchange requires.
  public static func run(
    over link: PeerLink, memo: MemoID, notebook: NotebookID, before deadline: Deadline
  ) throws(TransportError) -> (records: [SyncRecord], bindings: [ReplicaBinding]) {
    defer { link.channel.close() }
    var exchange = HistoryExchange(notebook: notebook, memo: memo)
    try link.channel.send(exchange.ask)
    while true {
      let frame: Frame?
      do throws(TransportError) {
        frame = try link.channel.receive(before: deadline)
      } catch  where error.kind == .closed {
        frame = nil
      }
      switch exchange.receive(frame) {
      case .more: continue
      case .done(let records, let bindings):
        try? link.channel.send(PeerSession.goodbye("done"))
        return (records, bindings)
      case .failed(let why):
        try? link.channel.send(PeerSession.goodbye("malformed"))
        throw TransportError(.protocolViolation, why)
      }
    }
  }
}
