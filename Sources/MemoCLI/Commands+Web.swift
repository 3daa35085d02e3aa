import Dispatch
import FoundationEssentials
import MemoApp
import MemoCore
import MemoNode
import MemoStore
import MemoSystem
import MemoVault
import MemoWeb
import MemoWebApp
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// `web`: the memo-peer page for the people in the house who do not use a terminal.
enum WebCommands {
  /// The options of `web`.
  enum WebOptions {
    static let port = ValueOption(
      "port", value: "PORT", "TCP port (default 8426, or the next free one up to 8435; 0: any free port)")
    static let address = RepeatedOption(
      "address", value: "ADDRESS", "127.0.0.1, ::1 or localhost (both, the default); any other address is refused")
    static let open = Flag("open", "open the page in your browser (xdg-open)")
    static let sessionTimeout = ValueOption(
      "session-timeout", value: "DURATION",
      "end a signed-in browser's session after this long without use (default 30m; 10s to 12h)")
  }

  static let web = Command(
    name: "web", summary: "Serve the memo-peer page in a browser on this computer (127.0.0.1 and ::1 only).",
    details: """
      Listens on this computer's loopback addresses only and prints a one-time link that
      signs a browser in (the link works once; the next one is printed after each sign-in).
      The page lists, searches, shows, creates, edits and deletes memos, shows the inbox,
      conflicts side by side, trusted devices and local-network consent, and syncs on a
      click, asking for consent first as the terminal does. Memo text leaves the page while
      its window is in the background. --open hands the link to your browser through a 0600
      file in $XDG_RUNTIME_DIR (xdg-open FILE), so the link never appears in another
      process's arguments. With a server of this node already running (`web`, or `serve
      --web`), prints or opens its link instead of starting another. A signed-in browser's
      session ends after --session-timeout without use (30 minutes; the page's own polling is
      not use) and 12 hours after sign-in, and a lock suspends it (the page then offers only
      its unlock form) and empties the page. SIGTERM or Ctrl-C stops it. docs/WEB.md
      describes the page, its limits and its JSON API.
      """,
    options: [WebOptions.port, WebOptions.address, WebOptions.open, WebOptions.sessionTimeout],
    positionals: []
  ) { context in
    let paths = try context.paths()
    let addresses = try LoopbackAddress.parse(context.arguments[WebOptions.address])
    let port = try webPort(context.arguments[WebOptions.port], option: WebOptions.port, command: "web")
    let sessionIdle = try sessionTimeout(context.arguments[WebOptions.sessionTimeout])
    let files = try WebRuntimeFiles(paths: paths, environment: context.environment)
    let printer = LinePrinter()
    if let running = files.running() {
      printer.error("memo-peer web: already running for this node (pid \(running.pid), port \(running.port))")
      if context.arguments.has(WebOptions.open) {
        openInBrowser(files.launcherPath, environment: context.environment, printer: printer, reportExit: false)
      } else {
        printer.print(running.url)
      }
      return
    }
    let stop = DispatchSemaphore(value: 0)
    let signals = [SIGTERM, SIGINT].map { number -> any DispatchSourceSignal in
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
      source.setEventHandler { stop.signal() }
      source.resume()
      return source
    }
    let server = try LocalWebServer(
      paths: paths, files: files, addresses: addresses, port: port, sessionIdle: sessionIdle,
      logger: context.logger.scoped("web"), report: { printer.error("memo-peer web: \($0)") },
      onSignIn: { url in
        printer.error("memo-peer web: a browser signed in; the next one-time link:")
        printer.print(url)
      })
    printer.error(
      "memo-peer web: serving \(server.server.baseURLs.joined(separator: " and ")) (this computer only); "
        + "Ctrl-C stops it. Open this one-time link to sign in:")
    printer.print(server.server.signInURL)
    if context.arguments.has(WebOptions.open) {
      openInBrowser(files.launcherPath, environment: context.environment, printer: printer)
    }
    stop.wait()
    server.stop()
    withExtendedLifetime(signals) {}
  }

  /// `--port`/`--web-port`: nil when not given (the default port or the next free one).
  static func webPort(_ text: String?, option: ValueOption, command: String) throws -> UInt16? {
    guard let text else { return nil }
    guard let port = UInt16(text) else {
      throw ArgumentParser.usage(
        "--\(option.spec.name) needs a number from 0 to 65535", suggestion: nil, command: command)
    }
    return port
  }

  /// `--session-timeout`: 10 s to 12 h (the absolute lifetime), default 30 minutes.
  static func sessionTimeout(_ text: String?) throws -> Double {
    guard let text else { return WebSessions.defaultIdleSeconds }
    guard let seconds = DurationText.seconds(text), (10...WebSessions.absoluteSeconds).contains(seconds) else {
      throw ArgumentParser.usage(
        "--session-timeout needs a duration from 10s to 12h, such as 30m", suggestion: nil, command: "web")
    }
    return seconds
  }

  /// Runs `xdg-open FILE` (the launcher page, never the link itself) and reports a failure
  /// without stopping the server.
  ///
  /// xdg-open is spawned here, on the caller's thread, before this returns: `web --open`
  /// with a server already running exits right after, and an opener started on a thread of
  /// its own lost that race in 3 runs of 10 (issue 38), so the browser never opened. It runs
  /// in a session of its own (a Ctrl-C meant for the server does not reach the browser it
  /// starts). With `reportExit` (the server keeps running) a thread waits for it and says
  /// when it failed; without, the command exits and xdg-open goes on by itself.
  static func openInBrowser(
    _ file: String, environment: [String: String], printer: LinePrinter, reportExit: Bool = true
  ) {
    let directories = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
    guard let opener = directories.map({ $0 + "/xdg-open" }).first(where: { access($0, X_OK) == 0 }) else {
      printer.error(
        "memo-peer web: cannot open a browser: xdg-open is not installed (Debian: xdg-utils); open the link above")
      return
    }
    let child: pid_t
    do { child = try ToolProcess.run(opener, [file], input: nil, detach: true).pid } catch {
      printer.error("memo-peer web: cannot start xdg-open; open the link above")
      return
    }
    guard reportExit else { return }
    // Without the thread, xdg-open still runs; only a failure goes unreported.
    _ = try? SystemThread.start(name: "mp.xdg-open") {
      if let status = try? ToolProcess.waitForExit(child, opener), status != 0 {
        printer.error("memo-peer web: xdg-open failed (status \(status)); open the link above")
      }
    }
  }
}

/// A web server of this node with its runtime files, for `web` and `serve --web`.
final class LocalWebServer: Sendable {
  let server: WebServer
  let files: WebRuntimeFiles

  init(
    paths: NodePaths, files: WebRuntimeFiles, addresses: [LoopbackAddress], port: UInt16?,
    sessionIdle: Double = WebSessions.defaultIdleSeconds, logger: Logger,
    report: @escaping @Sendable (String) -> Void, onSignIn: @escaping @Sendable (String) -> Void
  ) throws {
    // Problems with the store (permissions, a foreign database) show now, not on the page.
    _ = try MemoStore.open(paths: paths, logger: logger, use: .background)
    let backend = WebBackend(paths: paths, logger: logger, clock: App.wallClock)
    let info = Mutex<WebRuntimeFiles.Info?>(nil)
    let keys = DeviceKeys(paths: paths)
    let server = try WebServer(
      addresses: addresses, port: port, api: backend, logger: logger,
      onSignIn: { url in
        let next = info.withLock { info -> WebRuntimeFiles.Info? in
          info?.url = url
          return info
        }
        if let next { try? files.write(next) }
        onSignIn(url)
      }, sessionIdleSeconds: sessionIdle,
      isLocked: { keys.isLocked })
    for note in server.notes { report(note) }
    let written = WebRuntimeFiles.Info(
      pid: getpid(), port: server.origins.port, addresses: server.origins.addresses.map(\.rawValue),
      url: server.signInURL)
    info.withLock { $0 = written }
    do { try files.write(written) } catch {
      server.stop()
      throw error
    }
    self.server = server
    self.files = files
    watch = WebChangeWatch(paths: paths, keys: DeviceKeys(paths: paths), server: server, backend: backend)
  }

  /// Suspends the page's sessions when the node locks (`memo-peer lock`, the idle timeout),
  /// and answers the page's status calls that wait for a change.
  private let watch: WebChangeWatch

  /// Stops serving and removes the runtime files (the link dies with them).
  func stop() {
    watch.stop()
    server.stop()
    files.remove()
  }
}

/// Watches the node while the page is served, on a thread of its own:
///
/// - its lock state: when it becomes locked (`memo-peer lock` anywhere, the idle timeout of
///   `complete`, the page's own Lock), every session is suspended within `interval`, so a
///   copy of a cookie is worth nothing from then on (docs/WEB.md), even when the node is
///   unlocked again before any request came. Requests do not wait for it: the front door
///   asks the lock state on each one.
/// - the store's folder (inotify, `FolderChangeWatch`, as `serve` watches it): a write there
///   lets the page's waiting status calls go whose mark moved (`WebServer.wakeWaiters`), so
///   a change reaches the page as soon as it is stored, whoever stored it; a lock or unlock,
///   and every look while locked, lets them all go. Without the inotify watch (the kernel
///   refused it) the mark is compared once a second instead.
final class WebChangeWatch: Sendable {
  /// The longest sleep: the keyring's lock state is asked at most once a second, so an idle
  /// server stays idle.
  static let interval = 1.0
  private let stopped = Mutex(false)
  private let folders: FolderChangeWatch?

  init(paths: NodePaths, keys: DeviceKeys, server: WebServer, backend: WebBackend) {
    let folders = try? FolderChangeWatch()
    // SQLite's shared memory is written by readers too (this server's own status reads).
    if let folders, !folders.watch(paths.dataDirectory, ignoring: ["-shm", ".open-lock"]) {
      self.folders = nil
    } else {
      self.folders = folders
    }
    let watching = self.folders
    let sessions = server.sessions
    let watch: @Sendable () -> Void = { [self] in
      var wasLocked = keys.isLocked
      var lookedAtLock = monotonicSeconds()
      while !stopped.withLock({ $0 }) {
        // Until the next look at the lock, unless something is written first.
        let untilLook = max(0.01, lookedAtLock + Self.interval - monotonicSeconds())
        let written: Bool
        if let watching {
          written = !watching.wait(upTo: untilLook).folders.isEmpty
        } else {
          SystemThread.sleep(seconds: untilLook)
          written = true
        }
        // The lock state once a second, as before writes woke this thread: a command that
        // changes the protection writes here while it works. (poll's milliseconds may end
        // the wait a little early: 10 ms count as the second.)
        let now = monotonicSeconds()
        if now >= lookedAtLock + Self.interval - 0.01 {
          lookedAtLock = now
          let locked = keys.isLocked
          sessions.observeLock { locked }
          if locked || wasLocked {
            // A lock, an unlock, or locked still: every waiting call goes, to be answered
            // (a session the lock suspended gets its 401 now, one that came as the lock did
            // too).
            wasLocked = locked
            server.wakeWaiters(everyone: true, mark: nil)
            continue
          }
        }
        server.wakeWaiters(mark: written ? { backend.changeMark() } : nil)
      }
    }
    // Without the watch, requests still meet every lock (the front door asks on each), and
    // waiting status calls end after their longest wait (the server's watchdog sees to it).
    _ = try? SystemThread.start(name: "mp.web-watch", watch)
  }

  func stop() {
    stopped.withLock { $0 = true }
    folders?.poke()
  }
}
