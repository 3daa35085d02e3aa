/// One browser object inside avahi-daemon, for one browse stream: made with
/// `Server2.…BrowserPrepare`, subscribed to, then started — so the daemon hands over what
/// its cache already knows at once (avahi-daemon 0.8 holds back the results of the older
/// `…BrowserNew`, which avahi-client and dns_sd use, by about 10 ms). Daemons without
/// Server2 get `…BrowserNew`. The object is freed when the stream ends.
///
/// `@unchecked Sendable`: `path`, `stopped` and `items` are used only on the bus's queue
/// (every callback below runs there, and `stop` hops there).
final class AvahiBrowser: @unchecked Sendable {
  typealias ItemHandler = @Sendable (_ event: BrowseEvent) -> Void
  typealias FailureHandler = @Sendable (BusError) -> Void

  private let bus: BusConnection
  private let browser: AvahiAPI.Browser
  private let interface: Int32
  private var path: String?
  private var stopped = false
  private var items = AvahiItemSet()

  init(bus: BusConnection, browser: AvahiAPI.Browser, interfaceIndex: UInt32) {
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
        guard adopt(reply, onEvent: onEvent, onFailure: onFailure), let path else { return }
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
      guard !stopped else { return }
      stopped = true
      release()
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
    self.path = path
    guard !stopped else {
      release()
      return false
    }
    bus.route(signalsFrom: path) { [self] signal in handle(signal, onEvent: onEvent, onFailure: onFailure) }
    return true
  }

  private func handle(_ signal: BusMessage, onEvent: ItemHandler, onFailure: FailureHandler) {
    guard !stopped else { return }
    switch signal.member {
    case "ItemNew":
      if let item = AvahiItem(signal: signal.arguments, browser: browser), items.insert(item) {
        onEvent(.added(item.instance))
      }
    case "ItemRemove":
      if let item = AvahiItem(signal: signal.arguments, browser: browser), items.remove(item) {
        onEvent(.removed(item.instance))
      }
    case "Failure":
      onFailure(BusError(name: "org.freedesktop.Avahi.Failure", detail: signal.arguments.first?.string ?? ""))
    default:
      break  // AllForNow and CacheExhausted: browsing goes on until the caller stops.
    }
  }

  private func release() {
    guard let path else { return }
    bus.route(signalsFrom: path, to: nil)
    bus.send(browser.free(path: path))
    self.path = nil
  }
}
