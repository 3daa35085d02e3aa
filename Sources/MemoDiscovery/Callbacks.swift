internal import CDNSSD
import FoundationEssentials
import MemoSystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

// The C callback of a registration. It is a global closure without captures (so it converts
// to a C function pointer and carries no actor isolation); it finds its Swift context
// through the `context` pointer, which the owning ServiceRefOwner keeps alive.

final class RegisterContext: Sendable {
  let once: OnceBox<String>
  let health: RegistrationHealth
  init(once: OnceBox<String>, health: RegistrationHealth) {
    self.once = once
    self.health = health
  }
}

/// Whether a confirmed registration still stands: the daemon reports a failure after its
/// confirmation only when it went away (avahi-daemon stopped or restarted), and the
/// advertisement with it.
final class RegistrationHealth: Sendable {
  private let lost = Atomic<Bool>(false)
  var isLost: Bool { lost.load(ordering: .relaxed) }
  /// A failure: it counts as a loss once the registration was confirmed.
  func failed(after once: OnceBox<String>) { if once.isFinished { lost.store(true, ordering: .relaxed) } }
}

let registerReply: DNSServiceRegisterReply = { _, _, errorCode, name, _, _, context in
  guard let context else { return }
  let box = Unmanaged<RegisterContext>.fromOpaque(context).takeUnretainedValue()
  guard errorCode == DNSServiceErrorType(kDNSServiceErr_NoError), let name else {
    // Before the confirmation this fails the registration; after it, the advertisement is gone.
    box.health.failed(after: box.once)
    box.once.finish(.failure(DNSServiceError(code: errorCode).memoPeerError))
    return
  }
  box.once.finish(.success(String(cString: name)))
}

/// Presentation form of an A or AAAA rdata; IPv6 link-local gets `%interface`.
func formatAddress(_ bytes: [UInt8], type: UInt16, interfaceIndex: UInt32) -> String? {
  let family: Int32
  switch (Int(type), bytes.count) {
  case (Int(kDNSServiceType_A), 4): family = AF_INET
  case (Int(kDNSServiceType_AAAA), 16): family = AF_INET6
  default: return nil
  }
  var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
  guard inet_ntop(family, bytes, &text, socklen_t(text.count)) != nil else { return nil }
  var address = String(nulTerminated: text)
  if family == AF_INET6 && bytes[0] == 0xFE && (bytes[1] & 0xC0) == 0x80 {
    var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
    if if_indextoname(interfaceIndex, &name) != nil {
      address += "%" + String(nulTerminated: name)
    }
  }
  return address
}
