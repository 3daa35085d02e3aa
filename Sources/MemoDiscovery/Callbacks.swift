internal import CDNSSD
import Foundation

// The C callbacks. They are global closures without captures (so they convert to C function
// pointers and carry no actor isolation); each finds its Swift context through the `context`
// pointer, which the owning ServiceRefOwner keeps alive.

final class BrowseContext: Sendable {
  let handler: @Sendable (BrowseEvent) -> Void
  init(_ handler: @escaping @Sendable (BrowseEvent) -> Void) { self.handler = handler }
}

final class ResolveContext: Sendable {
  let instance: ServiceInstance
  let once: OnceBox<ResolvedService>
  init(instance: ServiceInstance, once: OnceBox<ResolvedService>) {
    self.instance = instance
    self.once = once
  }
}

final class RegisterContext: Sendable {
  let once: OnceBox<String>
  init(once: OnceBox<String>) { self.once = once }
}

/// Gathers A and AAAA answers: done as soon as both kinds have answered (usually at once,
/// from the daemon's cache), or `window` after the first answer when a host lacks one kind.
final class AddressCollector: @unchecked Sendable {
  // Mutated only on `queue` (the DNS-SD callbacks and the timer run there).
  private var addresses: [String] = []
  private var answeredTypes = Set<UInt16>()
  private var timerStarted = false
  private var owners: [ServiceRefOwner] = []
  let interfaceIndex: UInt32
  let once: OnceBox<[String]>
  let window: Duration
  let queue: DispatchQueue

  init(interfaceIndex: UInt32, once: OnceBox<[String]>, window: Duration, queue: DispatchQueue) {
    self.interfaceIndex = interfaceIndex
    self.once = once
    self.window = window
    self.queue = queue
  }

  func keepAlive(_ owner: ServiceRefOwner) { owners.append(owner) }

  func add(_ address: String, type: UInt16) {
    if !addresses.contains(address) { addresses.append(address) }
    answeredTypes.insert(type)
    if answeredTypes.count == 2 { return finish() }
    guard !timerStarted else { return }
    timerStarted = true
    queue.asyncAfter(deadline: .now() + window.seconds) { [self] in finish() }
  }

  private func finish() {
    once.finish(.success(addresses))
    for owner in owners { owner.cancel() }
  }
}

let browseReply: DNSServiceBrowseReply = { _, flags, interfaceIndex, errorCode, name, type, domain, context in
  guard let context, errorCode == DNSServiceErrorType(kDNSServiceErr_NoError), let name, let type, let domain else {
    return
  }
  let box = Unmanaged<BrowseContext>.fromOpaque(context).takeUnretainedValue()
  let instance = ServiceInstance(
    name: String(cString: name), type: String(cString: type), domain: String(cString: domain),
    interfaceIndex: interfaceIndex)
  box.handler(flags & DNSServiceFlags(kDNSServiceFlagsAdd) != 0 ? .added(instance) : .removed(instance))
}

let resolveReply: DNSServiceResolveReply = { _, _, _, errorCode, _, host, port, txtLength, txt, context in
  guard let context else { return }
  let box = Unmanaged<ResolveContext>.fromOpaque(context).takeUnretainedValue()
  guard errorCode == DNSServiceErrorType(kDNSServiceErr_NoError), let host else {
    box.once.finish(.failure(DNSServiceError(code: errorCode).memoPeerError))
    return
  }
  let record = txt.map { Array(UnsafeBufferPointer(start: $0, count: Int(txtLength))) } ?? []
  box.once.finish(
    .success(
      ResolvedService(
        instance: box.instance, hostTarget: String(cString: host), port: UInt16(bigEndian: port),
        txt: TXTRecordBytes.decode(record))))
}

let registerReply: DNSServiceRegisterReply = { _, _, errorCode, name, _, _, context in
  guard let context else { return }
  let box = Unmanaged<RegisterContext>.fromOpaque(context).takeUnretainedValue()
  guard errorCode == DNSServiceErrorType(kDNSServiceErr_NoError), let name else {
    box.once.finish(.failure(DNSServiceError(code: errorCode).memoPeerError))
    return
  }
  box.once.finish(.success(String(cString: name)))
}

let queryReply: DNSServiceQueryRecordReply = {
  _, flags, interfaceIndex, errorCode, _, type, _, length, data, _, context in
  guard let context, errorCode == DNSServiceErrorType(kDNSServiceErr_NoError), let data,
    flags & DNSServiceFlags(kDNSServiceFlagsAdd) != 0
  else { return }
  let box = Unmanaged<AddressCollector>.fromOpaque(context).takeUnretainedValue()
  let bytes = Array(UnsafeRawBufferPointer(start: data, count: Int(length)))
  if let address = formatAddress(bytes, type: type, interfaceIndex: interfaceIndex) { box.add(address, type: type) }
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
