import Dispatch
import FoundationEssentials
import MemoCore
import MemoProtocol
import MemoSystem

/// `ping` over a ready link (`PingExchange`: each ping numbered, answered only by a `pong`
/// with its bytes), timed. Blocking: run it on a thread of its own (`BlockingIO`).
public enum PeerPing {
  /// Sends `count` pings `interval` seconds apart; calls `onPong` with each round trip in
  /// milliseconds (two decimals). Returns the times; throws when the peer stops answering,
  /// with how many were answered, then says goodbye and closes the link.
  public static func run(
    over link: PeerLink, count: Int, interval: Double, onPong: (Int, Double) -> Void
  ) throws(PingFailure) -> [Double] {
    var exchange = PingExchange()
    var times: [Double] = []
    for index in 0..<count {
      let started = DispatchTime.now().uptimeNanoseconds
      do throws(TransportError) {
        try link.channel.send(exchange.next())
        guard exchange.answers(try link.channel.receive()) else { throw TransportError(.closed, "no pong") }
      } catch {
        throw PingFailure(answered: index, error: error)
      }
      let milliseconds = (Double(DispatchTime.now().uptimeNanoseconds - started) / 1e4).rounded() / 100
      times.append(milliseconds)
      onPong(index, milliseconds)
      if index + 1 < count { SystemThread.sleep(seconds: interval) }
    }
    try? link.channel.send(PeerSession.goodbye("done"))
    link.channel.close()
    return times
  }

  /// The peer stopped answering after `answered` pings.
  public struct PingFailure: Error {
    public let answered: Int
    public let error: TransportError
  }
}
