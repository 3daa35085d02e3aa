import FoundationEssentials
import MemoCore
import MemoProtocol
import Synchronization

/// Recognises this node's own tags, computing each period's tag once. A browse prepares
/// the periods around now while it waits for the network: the HMACs (and OpenSSL's set-up
/// on first use, about a millisecond) then no longer sit between a peer's answer and its
/// line on screen.
final class OwnTagCache: Sendable {
  private let identity: AdvertisementIdentity
  /// Tags by period. The lock is held while a tag is computed, so a recognition waits for a
  /// preparation already under way instead of repeating it.
  private let tags = Mutex<[UInt64: String]>([:])

  init(_ identity: AdvertisementIdentity) { self.identity = identity }

  /// Computes the tags of the periods around `time`.
  func prepare(at time: Timestamp) {
    for period in Advertisement.candidatePeriods(at: time, rotationSeconds: identity.rotationSeconds) {
      _ = tag(period: period)
    }
  }

  /// Whether `tag` is this node's tag for a period around `time`.
  func recognizes(_ tag: String, at time: Timestamp) -> Bool {
    Advertisement.candidatePeriods(at: time, rotationSeconds: identity.rotationSeconds).contains {
      self.tag(period: $0) == tag
    }
  }

  private func tag(period: UInt64) -> String? {
    tags.withLock { tags in
      if let known = tags[period] { return known }
      let computed = try? identity.tag(period: period)
      tags[period] = computed
      return computed
    }
  }
}
