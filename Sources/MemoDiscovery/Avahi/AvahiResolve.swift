import Dispatch
import MemoCore
import MemoDBus
import Synchronization

/// Resolves one instance over IPv4 and IPv6 at once (two `ResolveService` calls on the
/// same connection) and merges the answers into one `ResolvedService` whose addresses list
/// IPv4 first. Done when both have answered — from the daemon's cache, within a
/// millisecond of each other — or `window` after the first answer when a host lacks one
/// family; a failure only when neither family answers.
///
/// Its state is used on the bus's queue, where replies and the window's timer run; the
/// mutex makes that checkable.
final class AvahiResolve: Sendable {
  static let transports = [AvahiAPI.inet, AvahiAPI.inet6]

  private let instance: ServiceInstance
  private let once: OnceBox<ResolvedService>
  private let window: Duration
  private let queue: DispatchQueue
  private struct State {
    var answers: [Int32: Result<AvahiResolution, BusError>] = [:]
    var windowStarted = false
  }
  private let state = Mutex(State())

  init(instance: ServiceInstance, once: OnceBox<ResolvedService>, window: Duration, queue: DispatchQueue) {
    self.instance = instance
    self.once = once
    self.window = window
    self.queue = queue
  }

  /// Sends both calls; the answers arrive through `receive`.
  func start(on bus: DispatchedBusConnection) {
    for transport in Self.transports {
      bus.call(AvahiAPI.resolveService(instance, protocol: transport)) { [self] result in
        receive(
          result.flatMap { reply in
            AvahiResolution(reply: reply.arguments, interfaceIndex: instance.interfaceIndex).map { .success($0) }
              ?? .failure(BusError(name: "org.freedesktop.DBus.Error.InvalidArgs", detail: "unexpected reply"))
          }, over: transport)
      }
    }
  }

  private func receive(_ answer: Result<AvahiResolution, BusError>, over transport: Int32) {
    enum Next {
      case finish, startWindow, wait
    }
    let next = state.withLock { state -> Next in
      state.answers[transport] = answer
      if state.answers.count == Self.transports.count { return .finish }
      guard case .success = answer, !state.windowStarted else { return .wait }
      state.windowStarted = true
      return .startWindow
    }
    switch next {
    case .finish: finish()
    case .startWindow: queue.asyncAfter(deadline: .now() + window.seconds) { [self] in finish() }
    case .wait: break
    }
  }

  private func finish() {
    let answers = state.withLock { $0.answers }
    let found = Self.transports.compactMap { try? answers[$0]?.get() }
    guard let first = found.first else {
      let error = Self.transports.lazy.compactMap { transport -> BusError? in
        if case .failure(let error) = answers[transport] { return error }
        return nil
      }.first
      return once.finish(.failure((error ?? .timedOut).memoPeerError))
    }
    var service = ResolvedService(
      instance: instance, hostTarget: AvahiNames.qualified(first.host), port: first.port,
      txt: TXTRecordBytes.decode(first.txtRecord))
    service.addresses = found.compactMap(\.address)
    once.finish(.success(service))
  }
}
