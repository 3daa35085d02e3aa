import Foundation
import MemoCore
import MemoStore
import MemoWeb
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// `web`: the memo-peer page for the people in the house who do not use a terminal.
enum WebCommands {
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
      --web`), prints or opens its link instead of starting another. SIGTERM or Ctrl-C stops
      it. docs/WEB.md describes the page and its JSON API.
      """,
    options: [
      OptionSpec("port", value: "PORT", "TCP port (default 8426, or the next free one up to 8435; 0: any free port)"),
      OptionSpec(
        "address", value: "ADDRESS", repeatable: true,
        "127.0.0.1, ::1 or localhost (both, the default); any other address is refused"),
      OptionSpec("open", "open the page in your browser (xdg-open)"),
    ],
    positionals: []
  ) { context in
    let paths = try context.paths()
    let addresses = try LoopbackAddress.parse(context.arguments.all("address"))
    let port = try webPort(context.arguments.value("port"), option: "port", command: "web")
    let files = try WebRuntimeFiles(paths: paths, environment: context.environment)
    let printer = LinePrinter()
    if let running = files.running() {
      printer.error("memo-peer web: already running for this node (pid \(running.pid), port \(running.port))")
      if context.arguments.has("open") {
        openInBrowser(files.launcherPath, environment: context.environment, printer: printer)
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
      paths: paths, files: files, addresses: addresses, port: port, logger: context.logger.scoped("web"),
      report: { printer.error("memo-peer web: \($0)") },
      onSignIn: { url in
        printer.error("memo-peer web: a browser signed in; the next one-time link:")
        printer.print(url)
      })
    printer.error(
      "memo-peer web: serving \(server.server.baseURLs.joined(separator: " and ")) (this computer only); "
        + "Ctrl-C stops it. Open this one-time link to sign in:")
    printer.print(server.server.signInURL)
    if context.arguments.has("open") {
      openInBrowser(files.launcherPath, environment: context.environment, printer: printer)
    }
    stop.wait()
    server.stop()
    withExtendedLifetime(signals) {}
  }

  /// `--port`/`--web-port`: nil when not given (the default port or the next free one).
  static func webPort(_ text: String?, option: String, command: String) throws -> UInt16? {
    guard let text else { return nil }
    guard let port = UInt16(text) else {
      throw ArgumentParser.usage("--\(option) needs a number from 0 to 65535", suggestion: nil, command: command)
    }
    return port
  }

  /// Runs `xdg-open FILE` (the launcher page, never the link itself) and reports a failure
  /// without stopping the server.
  static func openInBrowser(_ file: String, environment: [String: String], printer: LinePrinter) {
    let directories = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
    guard let opener = directories.map({ $0 + "/xdg-open" }).first(where: { access($0, X_OK) == 0 }) else {
      printer.error(
        "memo-peer web: cannot open a browser: xdg-open is not installed (Debian: xdg-utils); open the link above")
      return
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: opener)
    process.arguments = [file]
    process.environment = environment
    process.standardInput = FileHandle.nullDevice
    do {
      try process.run()
    } catch {
      printer.error("memo-peer web: cannot start xdg-open; open the link above")
      return
    }
    Thread.detachNewThread {
      process.waitUntilExit()
      if process.terminationStatus != 0 {
        printer.error("memo-peer web: xdg-open failed (status \(process.terminationStatus)); open the link above")
      }
    }
  }
}

/// A web server of this node with its runtime files, for `web` and `serve --web`.
final class LocalWebServer: Sendable {
  let server: WebServer
  let files: WebRuntimeFiles

  init(
    paths: NodePaths, files: WebRuntimeFiles, addresses: [LoopbackAddress], port: UInt16?, logger: Logger,
    report: @escaping @Sendable (String) -> Void, onSignIn: @escaping @Sendable (String) -> Void
  ) throws {
    // Problems with the store (permissions, a foreign database) show now, not on the page.
    _ = try MemoStore.open(paths: paths, logger: logger, use: .background)
    let backend = WebBackend(paths: paths, logger: logger, clock: { wallClock() })
    let info = Mutex<WebRuntimeFiles.Info?>(nil)
    let server = try WebServer(
      addresses: addresses, port: port, api: backend, logger: logger,
      onSignIn: { url in
        let next = info.withLock { info -> WebRuntimeFiles.Info? in
          info?.url = url
          return info
        }
        if let next { try? files.write(next) }
        onSignIn(url)
      })
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
  }

  /// Stops serving and removes the runtime files (the link dies with them).
  func stop() {
    server.stop()
    files.remove()
  }
}
