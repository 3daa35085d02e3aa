import MemoDBus
import Synchronization

/// One browser object inside avahi-daemon, for one browse stream: made with
/// `Server2.…BrowserPrepare`, subscribed to, then started — so the daemon hands over what
/// its cache already knows at once (avahi-daemon 0.8 holds back the results of the older
/// `…BrowserNew`, which avahi-client and dns_sd use, by about 10 ms). Daemons without
/// Server2 get `…BrowserNew`. The object is freed when the stream ends.
///
/// Its state is used on the bus's queue (every callback below runs there, and `stop` hops
/// there); the mutex makes that checkable, and is never held across a call to the bus.
final class AvahiBrowser: Sendable {
  typealias ItemHandler = @Sendable (_ event: BrowseEvent) -> Void
  typealias FailureHandler = @Sendable (BusError) -> Void

  private let bus: DispatchedBusConnection
  private let browser: AvahiAPI.Browser
  private let interface: Int32
  private struct State {
    var path: String?
    var stopped = false
    var items = AvahiItemSet()
  }
  private let state = Mutex(State())

  init(bus: DispatchedBusConnection, browser: AvahiAPI.Browser, interfaceIndex: UInt32) {
    self.bus = bus
    self.browser = browser
    interface = interfaceIndex == 0 ? AvahiAPI.anyInterface : Int32(bitPattern: interfaceIndex)
  }

  /// Starts browsing; `onEvent` hears each instance arriving or leaving (once per instance
  /// and interface, whichever IP transports saw it), `onFailure` a failure of the browser.
  func start(onEvent: @escaping ItemHandler, onFailure: @escaping FailureHandler) {
    bus.addMatch(browser.matchRule)
    bus.call(browser.prepare(interface: interface)) { [self] result in
      switch result {
      case .success(let reply):
        guard adopt(reply, onEvent: onEvent, onFailure: onFailure), let path = state.withLock({ $0.path }) else {
          return
        }
        bus.call(browser.start(path: path)) { started in
          if case .failure(let error) = started { onFailure(error) }
        }
      case .failure(let error) where error.isUnknownMethod:
        bus.call(browser.new(interface: interface)) { [self] result in
          switch result {
          case .success(let reply): adopt(reply, onEvent: onEvent, onFailure: onFailure)
          case .failure(let error): onFailure(error)
          }
        }
      case .failure(let error):
        onFailure(error)
      }
    }
  }

  /// Frees the daemon's browser object; no event is delivered afterwards. Idempotent.
  func stop() {
    bus.perform { [self] in
      let first = state.withLock { state in
        defer { state.stopped = true }
        return !state.stopped
      }
      if first { release() }
    }
  }

  /// Takes the object path from the daemon's reply and routes its signals here. False (and
  /// the object freed) when the stream has already ended or the reply names no object.
  @discardableResult
  private func adopt(_ reply: BusMessage, onEvent: @escaping ItemHandler, onFailure: @escaping FailureHandler)
    -> Bool
  {
    guard let path = reply.arguments.first?.string else {
      onFailure(BusError(name: "org.freedesktop.DBus.Error.InvalidArgs", detail: "no browser object path"))
      return false
    }
    let stopped = state.withLock { state in
      state.path = path
      return state.stopped
    }
    guard !stopped else {
      release()
      return false
    }
    bus.route(signalsFrom: path) { [self] signal in handle(signal, onEvent: onEvent, onFailure: onFailure) }
    return true
  }

  private func handle(_ signal: BusMessage, onEvent: ItemHandler, onFailure: FailureHandler) {
    guard !state.withLock({ $0.stopped }) else { return }
    switch signal.member {
    case "ItemNew":
      if let item = AvahiItem(signal: signal.arguments, browser: browser), state.withLock({ $0.items.insert(item) }) {
        onEvent(.added(item.instance))
      }
    case "ItemRemove":
      if let item = AvahiItem(signal: signal.arguments, browser: browser), state.withLock({ $0.items.remove(item) }) {
        onEvent(.removed(item.instance))
      }
    case "Failure":
      onFailure(BusError(name: "org.freedesktop.Avahi.Failure", detail: signal.arguments.first?.string ?? ""))
    default:
      break  // AllForNow and CacheExhausted: browsing goes on until the caller stops.
    }
  }

  private func release() {
    guard
      let path = state.withLock({ state in
        defer { state.path = nil }
        return state.path
      })
    else { return }
    bus.route(signalsFrom: path, to: nil)
    bus.send(browser.free(path: path))
  }
}
