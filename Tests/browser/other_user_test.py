#!/usr/bin/python3
"""The page belongs to the Unix user who signed in (issue 38), in a real browser: Debian's
headless chromium, driven by selenium, in a network namespace with only loopback. Run as
root by Tests/MemoCLITests/WebOtherUserTests.swift, which makes a second Unix user
(useradd) and removes it afterwards.

The person (root here) signs in; the browser then visits a page the second user serves on
another loopback port (other_port_server.py), which is sent the session cookie and sets a
cookie of the same name for Path=/api. Then:

- the shadowing cookie does not sign the person out: the page goes on, and saves a memo;
- the cookie that reached the other port, presented from the second user's account (curl
  through runuser) against memo-peer's port, reads nothing and writes nothing (403
  forbidden-user), and ends the session: the same cookie is refused to the person too, and
  the page says it is signed out;
- a fresh sign-in link works with the shadow still in the browser;
- the server's log says what happened, without the cookie.

Environment: MEMO_PEER (the binary), MEMO_PEER_WEB_WORK (scratch, root's),
MEMO_PEER_OTHER_USER (the second user's name), MEMO_PEER_OTHER_FOLDER (a folder the second
user owns, holding other_port_server.py).
"""

import json
import os
import signal
import subprocess
import sys
import time

from selenium.common.exceptions import WebDriverException
from browser_support import WAIT_SECONDS, click, find, present, start_chromium, wait

BINARY = os.environ["MEMO_PEER"]
WORK = os.environ["MEMO_PEER_WEB_WORK"]
USER = os.environ["MEMO_PEER_OTHER_USER"]
FOLDER = os.environ["MEMO_PEER_OTHER_FOLDER"]
signal.alarm(400)


def step(text):
    print(f"--- {text}", flush=True)


def cli(*arguments, stdin=None):
    result = subprocess.run(
        [BINARY, *arguments], input=(stdin or "").encode(), capture_output=True, timeout=60, check=False)
    return result.returncode, result.stdout.decode(), result.stderr.decode()


def titles():
    status, out, err = cli("list", "--json")
    assert status == 0, err
    return sorted(memo["title"] for memo in json.loads(out)["memos"])


def printed_links():
    with open(os.path.join(WORK, "server.out"), encoding="utf-8") as printed:
        return [line.strip() for line in printed if line.startswith("http://")]


def start_server():
    out = open(os.path.join(WORK, "server.out"), "wb")
    err = open(os.path.join(WORK, "server.err"), "wb")
    server = subprocess.Popen([BINARY, "--debug", "web", "--port", "0"], stdout=out, stderr=err)
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline and not printed_links():
        assert server.poll() is None, "memo-peer web exited"
        time.sleep(0.1)
    assert printed_links(), "memo-peer web printed no link"
    return server, printed_links()[0]


def as_other_user(*arguments):
    """Runs `arguments` as the second Unix user (its own uid on every socket it opens)."""
    return subprocess.run(
        ["/usr/bin/timeout", "30", "/usr/sbin/runuser", "-u", USER, "--", *arguments],
        capture_output=True, timeout=60, check=False)


def other_users_curl(url, cookie, *extra):
    """curl as the second user: the status and the body."""
    result = as_other_user(
        "/usr/bin/curl", "-s", "-m", "10", "-w", "\n%{http_code}", "-H", f"Cookie: {cookie}", *extra, url)
    text = result.stdout.decode()
    body, _, status = text.rpartition("\n")
    return int(status or 0), body


def persons_curl(url, cookie):
    result = subprocess.run(
        ["curl", "-s", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}", "-H", f"Cookie: {cookie}", url],
        capture_output=True, check=False)
    return int(result.stdout.decode() or 0)


def page_ready(driver):
    return driver.execute_script("return document.body.dataset.ready === 'true'")


def main():
    status, _, err = cli("new", "--title", "Door code", stdin="1234\n")
    assert status == 0, err
    server, link = start_server()
    base = link.split("/login")[0]
    port = base.rsplit(":", 1)[1]
    name = f"memo_peer_session_{port}"
    other = subprocess.Popen(
        ["/usr/sbin/runuser", "-u", USER, "--", "/usr/bin/python3", os.path.join(FOLDER, "other_port_server.py"),
         FOLDER, port], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    driver = None
    try:
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline and not os.path.exists(os.path.join(FOLDER, "port")):
            assert other.poll() is None, "the other user's server exited"
            time.sleep(0.1)
        with open(os.path.join(FOLDER, "port"), encoding="utf-8") as port_file:
            other_port = int(port_file.read())
        driver = start_chromium(
            os.path.join(WORK, "profile"), os.path.join(WORK, "cache"), os.path.join(WORK, "chromedriver.log"),
            {"browser": "ALL"})

        step("the person signs in")
        driver.get(link)
        wait(driver, lambda: page_ready(driver), "the page")
        wait(driver, lambda: "Door code" in find(driver, "#content").text, "the list")

        step("the browser visits another user's page on another loopback port: it is sent the cookie")
        driver.get(f"http://127.0.0.1:{other_port}/")
        wait(driver, lambda: "another port" in driver.page_source, "the other user's page")
        log = os.path.join(FOLDER, "cookies.log")
        wait(driver, lambda: os.path.exists(log) and f"{name}=" in open(log, encoding="utf-8").read(),
             "the session cookie at the other port")
        sent = open(log, encoding="utf-8").read()
        stolen = [part.split("=", 1)[1] for line in sent.splitlines() for part in line.split("; ")
                  if part.startswith(name + "=") and not part.endswith("=shadow-from-another-port")][0]
        assert stolen, sent

        step("a shadowing cookie (Path=/api, set by the other port) does not sign the person out")
        cookies = driver.execute_cdp_cmd("Network.getAllCookies", {})["cookies"]
        ours = sorted((cookie["path"], cookie["value"] == stolen) for cookie in cookies if cookie["name"] == name)
        assert ours == [("/", True), ("/api", False)], f"the browser holds both cookies: {ours}"
        driver.get(base + "/")
        wait(driver, lambda: page_ready(driver), "the page")
        wait(driver, lambda: "Door code" in find(driver, "#content").text, "the list, signed in")
        assert "Signed out" not in driver.page_source
        click(driver, "#new-memo")
        wait(driver, lambda: present(driver, "#editor-body"), "the editor")
        find(driver, "#editor-title").send_keys("Saved beside a shadow")
        find(driver, "#editor-body").send_keys("the API answers with two cookies of one name")
        click(driver, "#save-button")
        wait(driver, lambda: present(driver, "#memo-body"), "the saved memo")
        assert titles() == ["Door code", "Saved beside a shadow"], titles()

        step("the stolen cookie from the other user's account reads nothing, writes nothing")
        status, body = other_users_curl(base + "/api/memos", f"{name}={stolen}")
        assert status == 403, (status, body)
        assert json.loads(body)["error"]["code"] == "forbidden-user", body
        assert "Door code" not in body and stolen not in body, body
        status, body = other_users_curl(
            base + "/api/memos", f"{name}={stolen}", "-H", f"Origin: {base}", "-H", "Content-Type: application/json",
            "--data-binary", '{"body": "written by another user"}')
        assert status == 403, (status, body)
        assert titles() == ["Door code", "Saved beside a shadow"], "nothing was written"

        step("... and ended the session: the cookie is refused to the person too, and the page is signed out")
        assert persons_curl(base + "/api/memos", f"{name}={stolen}") == 401

        # The page may learn it on its own (its waiting status call is answered); otherwise
        # the next thing the person does tells it.
        def signed_out_or_click():
            if "Signed out" in driver.page_source:
                return True
            try:
                tabs = present(driver, ".tab[data-view=devices]")
                if tabs:
                    tabs[0].click()
            except WebDriverException:
                pass
            return "Signed out" in driver.page_source

        wait(driver, signed_out_or_click, "the page to say it is signed out")

        step("a fresh sign-in link works with the shadow still in the browser")
        wait(driver, lambda: len(printed_links()) >= 2, "the next link")
        driver.get(printed_links()[-1])
        wait(driver, lambda: page_ready(driver), "the page")
        wait(driver, lambda: "Saved beside a shadow" in find(driver, "#content").text, "the list, signed in again")
        cookies = driver.execute_cdp_cmd("Network.getAllCookies", {})["cookies"]
        assert [c["path"] for c in cookies if c["name"] == name and c["value"] == "shadow-from-another-port"] == ["/api"]

        step("the server logged the refusal, never the cookie")
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=WAIT_SECONDS) == 0
        logged = open(os.path.join(WORK, "server.err"), encoding="utf-8").read()
        assert "another local user" in logged, logged[-2000:]
        assert stolen not in logged and stolen not in open(os.path.join(WORK, "server.out")).read()
        print("other user test passed", flush=True)
    except BaseException:
        if driver is not None:
            try:
                print(driver.page_source[:4000])
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
        other.terminate()
        try:
            other.wait(timeout=10)
        except subprocess.TimeoutExpired:
            other.kill()
            other.wait()


if __name__ == "__main__":
    try:
        main()
    except AssertionError as failure:
        print(f"FAILED: {failure}", file=sys.stderr)
        sys.exit(1)
