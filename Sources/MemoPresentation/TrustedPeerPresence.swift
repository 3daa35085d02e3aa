/// How many trusted (paired) peers are online now: the widget's "peers online" count.
///
/// An isolated input on purpose, so the widget's rendering stays pure: the CLI passes
/// `RecentTrustedContacts` (MemoNode), which counts trusted devices that had a trusted
/// connection with the running daemon in the last five minutes. Contract: never blocks on
/// the network, never throws (a failure reads as 0), and never reveals who the peers are,
/// only how many.
public protocol TrustedPeerPresence: Sendable {
  func onlineCount() -> Int
  /// How many of them have a live link (`serve`'s live sync) up now.
  func liveCount() -> Int
}
