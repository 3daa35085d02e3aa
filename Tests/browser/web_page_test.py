#!/usr/bin/python3
"""The memo-peer web page in a real browser: Debian's chromium, headless, driven by
selenium through chromedriver. Run by Tests/MemoCLITests/WebBrowserTests.swift (so `make
test` runs it), inside a network namespace of its own that has only a loopback interface:
neither the browser nor the server can reach any other network.

It starts `memo-peer --debug web`, signs in with the one-time link, and goes through the
page as a person would: the list, create, search, edit and delete (the command line must
agree after each), the privacy screen (blur and visibilitychange take every memo text out
of the page; focus brings it back), the inbox, a conflict kept both ways, the consent
prompt (nothing recorded until the click; then the same text as the terminal's, in the
consent log), and the locked page with its unlock form. Screenshots of the main views go
to $MEMO_PEER_SCREENSHOTS. Every request URL the browser made is written to
$WORK/request-urls.txt, and the server's output to $WORK/server.out and server.err, for
the canary checks of the Swift side; this script checks them too, and that the browser's
disk cache works (a cacheable control page is found in it) but holds no memo text.

Environment: MEMO_PEER (the binary), MEMO_PEER_HOME (a node prepared by the Swift side),
MEMO_PEER_WEB_WORK (scratch directory), MEMO_PEER_WEB_FIXTURES (a JSON file: canaries,
ids and texts of the prepared memos), MEMO_PEER_SCREENSHOTS.
"""

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

BINARY = os.environ["MEMO_PEER"]
WORK = os.environ["MEMO_PEER_WEB_WORK"]
SHOTS = os.environ["MEMO_PEER_SCREENSHOTS"]
with open(os.environ["MEMO_PEER_WEB_FIXTURES"], encoding="utf-8") as fixture_file:
    FIXTURES = json.load(fixture_file)
CANARIES = FIXTURES["canaries"]  # name -> value: unique strings that only memo text holds
CACHE = os.path.join(WORK, "cache")
PROFILE = os.path.join(WORK, "profile")
# Bounds on everything: the whole run, each wait.
signal.alarm(540)
WAIT_SECONDS = 20


def step(text):
    print(f"--- {text}", flush=True)


# ---- The command line, to check what the page did -----------------------------------------


def cli(*arguments, stdin=None):
    result = subprocess.run(
        [BINARY, *arguments], input=(stdin or "").encode(), capture_output=True, timeout=60, check=False
    )
    return result.returncode, result.stdout.decode(), result.stderr.decode()


def cli_json(*arguments, stdin=None):
    status, out, err = cli(*arguments, "--json", stdin=stdin)
    assert status == 0, f"memo-peer {' '.join(arguments)} --json: {status} {err}"
    return json.loads(out)


def listed():
    return cli_json("list")["memos"]


def body_of(memo_id):
    return cli_json("show", memo_id)["memo"]["body"]


# ---- The server ------------------------------------------------------------------------------


def start_server():
    out = open(os.path.join(WORK, "server.out"), "wb")
    err = open(os.path.join(WORK, "server.err"), "wb")
    server = subprocess.Popen([BINARY, "--debug", "web", "--port", "0"], stdout=out, stderr=err)
    deadline = time.time() + WAIT_SECONDS
    while time.time() < deadline:
        with open(os.path.join(WORK, "server.out"), encoding="utf-8") as printed:
            lines = [line.strip() for line in printed if line.startswith("http://")]
        if lines:
            return server, lines[0]
        assert server.poll() is None, "memo-peer web exited: " + open(os.path.join(WORK, "server.err")).read()
        time.sleep(0.1)
    raise AssertionError("memo-peer web printed no link")


# ---- A cacheable control page: proves the disk cache is in use ------------------------------

CONTROL = "cachecontrol" + uuid.uuid4().hex


class ControlHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (the name http.server calls)
        body = (
            f"<!doctype html><title>control</title><link rel=stylesheet href=/control.css><p>{CONTROL}</p>"
            if self.path == "/"
            else f"p::after {{ content: '{CONTROL}'; }}"
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html" if self.path == "/" else "text/css")
        self.send_header("Cache-Control", "public, max-age=3600")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *arguments):
        pass


def start_control_server():
    control = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ControlHandler)
    threading.Thread(target=control.serve_forever, daemon=True).start()
    return control


# ---- The browser -----------------------------------------------------------------------------


def start_browser():
    options = Options()
    options.binary_location = "/usr/lib/chromium/chromium"
    for argument in [
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1180,820",
        f"--user-data-dir={PROFILE}", f"--disk-cache-dir={CACHE}", "--no-first-run", "--no-default-browser-check",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
        "--disable-features=MediaRouter,Translate,OptimizationHints", "--password-store=basic", "--lang=en-US",
    ]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    service = Service("/usr/bin/chromedriver", log_path=os.path.join(WORK, "chromedriver.log"))
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(WAIT_SECONDS)
    return driver


REQUEST_URLS = []


def collect_request_urls(driver):
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            REQUEST_URLS.append(message["params"]["request"]["url"])


def wait(driver, condition, what):
    try:
        return WebDriverWait(driver, WAIT_SECONDS).until(lambda _: condition())
    except TimeoutException:
        raise AssertionError(f"timed out waiting for {what}") from None


def find(driver, css):
    return driver.find_element(By.CSS_SELECTOR, css)


def click(driver, css):
    """Clicks the element once it is there, again if the page redrew it meanwhile."""

    def attempt():
        try:
            elements = present(driver, css)
            if not elements or not elements[0].is_enabled():
                return False
            elements[0].click()
            return True
        except StaleElementReferenceException:
            return False

    wait(driver, attempt, f"{css} to click")


def present(driver, css):
    return driver.find_elements(By.CSS_SELECTOR, css)


def page_text(driver):
    """Everything of the page a snapshot could show: the markup and every field's value."""
    return driver.execute_script(
        "return document.documentElement.outerHTML + '\\n' +"
        " [...document.querySelectorAll('input, textarea, select')].map((e) => e.value).join('\\n');"
    )


def message(driver):
    return find(driver, "#message").text


def shot(driver, name):
    os.makedirs(SHOTS, exist_ok=True)
    driver.save_screenshot(os.path.join(SHOTS, name + ".png"))


def go_tab(driver, view):
    click(driver, f".tab[data-view={view}]")


# ---- The scenario ----------------------------------------------------------------------------


def scenario(driver, link, control_url):
    base = link.split("/login")[0]
    fixtures = FIXTURES

    step("the disk cache is in use: a cacheable control page")
    driver.get(control_url)
    wait(driver, lambda: CONTROL in driver.page_source, "the control page")

    step("the consent is undetermined before the page is opened")
    assert cli_json("consent", "status")["scopes"]["local-network"]["state"] == "undetermined"

    step("sign in with the one-time link; the token leaves the address bar")
    driver.get(link)
    wait(driver, lambda: driver.execute_script("return document.body.dataset.ready === 'true'"), "the page")
    assert driver.current_url == base + "/", driver.current_url
    wait(driver, lambda: fixtures["public_title"] in page_text(driver), "the list")
    assert fixtures["private_title"] in page_text(driver)
    shot(driver, "list")

    step("the used link does not sign anyone in again")
    second = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", link], capture_output=True, check=False)
    assert second.stdout.decode() == "403", second.stdout

    step("create a memo")
    click(driver, "#new-memo")
    wait(driver, lambda: present(driver, "#editor-body"), "the editor")
    find(driver, "#editor-title").send_keys(fixtures["new_title"])
    find(driver, "#editor-tags").send_keys("webtest")
    find(driver, "#editor-body").send_keys(fixtures["new_body"])
    click(driver, "#save-button")
    wait(driver, lambda: present(driver, "#memo-body") and fixtures["new_body"] in find(driver, "#memo-body").text,
         "the new memo")
    created = [memo for memo in listed() if memo["title"] == fixtures["new_title"]]
    assert len(created) == 1, "the command line lists the new memo once"
    memo_id = created[0]["id"]
    assert created[0]["tags"] == ["webtest"]
    assert body_of(memo_id) == fixtures["new_body"]
    shot(driver, "memo")

    step("privacy screen: blur takes the memo text out of the page, focus brings it back")
    driver.execute_script("window.dispatchEvent(new Event('blur'));")
    text = page_text(driver)
    assert fixtures["new_body"] not in text and fixtures["new_title"] not in text, "memo text left in the page"
    assert fixtures["public_title"] not in text
    assert find(driver, "#privacy-screen").is_displayed()
    driver.execute_script("window.dispatchEvent(new Event('focus'));")
    wait(driver, lambda: fixtures["new_body"] in page_text(driver), "the memo back after focus")

    step("privacy screen: visibilitychange to hidden and back")
    driver.execute_script(
        "Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => 'hidden'});"
        "Object.defineProperty(document, 'hidden', {configurable: true, get: () => true});"
        "document.dispatchEvent(new Event('visibilitychange'));"
    )
    text = page_text(driver)
    assert fixtures["new_body"] not in text and fixtures["new_title"] not in text, "memo text left in a hidden tab"
    driver.execute_script(
        "Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => 'visible'});"
        "Object.defineProperty(document, 'hidden', {configurable: true, get: () => false});"
        "document.dispatchEvent(new Event('visibilitychange'));"
    )
    wait(driver, lambda: fixtures["new_body"] in page_text(driver), "the memo back when visible")

    step("edit it; unsaved text leaves the page on blur and comes back into the editor")
    click(driver, "#edit-button")
    wait(driver, lambda: present(driver, "#editor-body"), "the editor")
    editor = find(driver, "#editor-body")
    editor.clear()
    editor.send_keys(fixtures["edited_body"])
    driver.execute_script("window.dispatchEvent(new Event('blur'));")
    assert fixtures["edited_body"] not in page_text(driver), "unsaved text left in the page"
    driver.execute_script("window.dispatchEvent(new Event('focus'));")
    wait(driver, lambda: present(driver, "#editor-body") and find(driver, "#editor-body").get_attribute("value")
         == fixtures["edited_body"], "the unsaved text back in the editor")
    click(driver, "#save-button")
    wait(driver, lambda: present(driver, "#memo-body") and fixtures["edited_body"] in find(driver, "#memo-body").text,
         "the edited memo")
    assert body_of(memo_id) == fixtures["edited_body"], "the command line shows the edit"

    step("search and the tag filter")
    go_tab(driver, "memos")
    wait(driver, lambda: present(driver, "#search"), "the list")
    find(driver, "#search").send_keys(fixtures["edited_word"])
    wait(driver, lambda: [item.get_attribute("data-id") for item in present(driver, ".memo-item")] == [memo_id],
         "the search result")
    search = find(driver, "#search")
    search.clear()
    search.send_keys(fixtures["public_body_word"])
    wait(driver, lambda: [item.get_attribute("data-id") for item in present(driver, ".memo-item")]
         == [fixtures["public_id"]], "the public memo found by a word of its body")
    find(driver, "#search").clear()
    find(driver, "#search").send_keys(" ")
    Select(find(driver, "#tag-filter")).select_by_value("webtest")
    wait(driver, lambda: [item.get_attribute("data-id") for item in present(driver, ".memo-item")] == [memo_id],
         "the tag filter")
    Select(find(driver, "#tag-filter")).select_by_value("")
    wait(driver, lambda: len(present(driver, ".memo-item")) > 1, "the whole list again")

    step("delete it, after the page's own confirmation")
    click(driver, f".memo-item[data-id='{memo_id}']")
    wait(driver, lambda: present(driver, "#delete-button"), "the memo")
    click(driver, "#delete-button")
    wait(driver, lambda: present(driver, "#dialog [data-action=confirm]"), "the confirmation")
    click(driver, "#dialog [data-action=confirm]")
    wait(driver, lambda: message(driver) == "Deleted.", "the delete")
    assert memo_id not in [memo["id"] for memo in listed()], "the command line no longer lists it"
    assert cli("show", memo_id)[0] == 3

    step("accept the inbox memo")
    go_tab(driver, "inbox")
    wait(driver, lambda: present(driver, ".inbox-item"), "the inbox")
    assert fixtures["inbox_title"] in page_text(driver)
    click(driver, ".inbox-item [data-action=accept]")
    wait(driver, lambda: "Accepted" in message(driver), "the acceptance")
    assert cli_json("inbox")["entries"] == []
    accepted = [memo for memo in listed() if memo["title"] == fixtures["inbox_title"]]
    assert len(accepted) == 1 and body_of(accepted[0]["id"]) == fixtures["inbox_body"]

    step("a conflict, side by side, kept both ways")
    go_tab(driver, "conflicts")
    wait(driver, lambda: present(driver, ".conflict-item"), "the conflicts")
    click(driver, ".conflict-item")
    wait(driver, lambda: present(driver, "#version-a") and present(driver, "#version-b"), "the two versions")
    assert fixtures["conflict_body_a"] in find(driver, "#version-a").text
    assert fixtures["conflict_body_b"] in find(driver, "#version-b").text
    shot(driver, "conflict")
    click(driver, "#keep-both")
    wait(driver, lambda: "Resolved" in message(driver), "the resolution")
    assert cli_json("conflicts")["conflicts"] == []
    bodies = [body_of(memo["id"]) for memo in listed()]
    for version in ["conflict_body_a", "conflict_body_b"]:
        assert len([body for body in bodies if fixtures[version] in body]) == 1, f"{version} kept as one memo"
    assert all(not memo["conflict"] and "conflict_of" not in memo for memo in listed())

    step("devices")
    go_tab(driver, "devices")
    wait(driver, lambda: "No trusted devices yet" in find(driver, "#content").text, "the devices view")

    step("consent: asked only on the Sync click, recorded only on Allow, with the terminal's text")
    consent = cli_json("consent", "status")
    assert consent["scopes"]["local-network"]["state"] == "undetermined", "nothing recorded before the click"
    click(driver, "#sync-button")
    wait(driver, lambda: present(driver, "#consent-text"), "the consent prompt")
    shown = find(driver, "#consent-text").text
    assert shown == consent["usage_text"], f"the prompt shows the terminal's text: {shown!r}"
    assert cli_json("consent", "status")["scopes"]["local-network"]["state"] == "undetermined", "the prompt alone records nothing"
    shot(driver, "consent")
    click(driver, "#dialog [data-action=allow]")
    wait(driver, lambda: "trusts no device" in message(driver), "the sync, with nobody to sync with")
    after = cli_json("consent", "status")["scopes"]["local-network"]
    assert after["state"] == "granted", after
    assert after["last"]["usage_text"] == shown and after["last"]["method"] == "web", after["last"]

    step("locked: only what list shows locked, and the unlock form")
    go_tab(driver, "memos")
    status, _, err = cli("protect", "complete", "--new-passphrase-fd", "0", stdin=CANARIES["passphrase"] + "\n")
    assert status == 0, err
    status, _, err = cli("lock")
    assert status == 0, err
    wait(driver, lambda: present(driver, "#unlock-form"), "the locked page")
    text = page_text(driver)
    assert fixtures["public_title"] in text, "titles of memos not marked private stay listed"
    for name in ["private_title", "public_body", "private_body", "public_tag", "private_tag"]:
        assert fixtures[name] not in text, f"{name} shown while locked"
    field = find(driver, "#passphrase")
    assert field.get_attribute("type") == "password"
    assert field.get_attribute("autocomplete") == "off"
    assert find(driver, "#unlock-form").get_attribute("autocomplete") == "off"
    shot(driver, "locked")
    field.send_keys(CANARIES["passphrase"])
    click(driver, "#unlock-button")
    wait(driver, lambda: not present(driver, "#unlock-form"), "the unlock")
    assert cli_json("status")["protection"]["state"] == "unlocked"
    wait(driver, lambda: fixtures["private_title"] in page_text(driver), "private titles back")
    assert CANARIES["passphrase"] not in page_text(driver), "the passphrase stays out of the page"

    step("sign out")
    click(driver, "#sign-out-button")
    wait(driver, lambda: "Signed out" in driver.page_source, "the signed-out page")
    driver.get(base + "/")
    wait(driver, lambda: "not signed in" in driver.page_source, "the sign-in notice")
    collect_request_urls(driver)


def scan_directory(root):
    findings = []
    found_control = False
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            try:
                with open(path, "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            if CONTROL.encode() in data:
                found_control = True
            for kind, value in CANARIES.items():
                if value.encode() in data:
                    findings.append(f"{path} holds {kind}")
    return findings, found_control


def main():
    control = start_control_server()
    server, link = start_server()
    driver = None
    try:
        driver = start_browser()
        scenario(driver, link, f"http://127.0.0.1:{control.server_address[1]}/")
        driver.quit()
        driver = None

        step("no memo text in any request URL")
        with open(os.path.join(WORK, "request-urls.txt"), "w", encoding="utf-8") as urls:
            urls.write("\n".join(REQUEST_URLS) + "\n")
        assert len(REQUEST_URLS) > 20, f"only {len(REQUEST_URLS)} requests were seen"
        leaks = [url for url in REQUEST_URLS for value in CANARIES.values() if value in url]
        assert not leaks, leaks

        step("the disk cache holds the control page and no memo text")
        findings, found_control = scan_directory(CACHE)
        assert found_control, "the control page is not in the disk cache: the check would prove nothing"
        assert not findings, findings

        step("the server stops on SIGTERM and removes its sign-in link")
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=WAIT_SECONDS) == 0
        print("browser test passed", flush=True)
    except BaseException:
        if driver is not None:
            try:
                shot(driver, "failure")
                print(driver.page_source[:6000])
                for entry in driver.get_log("browser"):
                    print("console:", entry.get("level"), entry.get("message"))
            except Exception:  # noqa: BLE001 (the failure itself matters, not this)
                pass
        raise
    finally:
        if driver is not None:
            driver.quit()
        if server.poll() is None:
            server.kill()
            server.wait()
        control.shutdown()


if __name__ == "__main__":
    try:
        main()
    except AssertionError as failure:
        print(f"FAILED: {failure}", file=sys.stderr)
        sys.exit(1)
