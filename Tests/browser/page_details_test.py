#!/usr/bin/python3
"""Details of the page seen in issue 38, in headless chromium (selenium), in a network
namespace with only loopback; run by Tests/MemoCLITests/WebBrowserTests.swift:

- at phone width (390 px) the Devices view fits: nothing wider than the window;
- a title with a right-to-left override (or any control) is shown escaped, as the terminal
  shows it (`\\u{202e}` and ` [escaped]`), never drawn reversed;
- a save that crossed an edit made elsewhere says so in the page's own words (the text was
  kept as a new memo, which the page opens), not by naming a command.

Environment: MEMO_PEER (the binary), MEMO_PEER_HOME (an empty node), MEMO_PEER_WEB_WORK.
"""

import json
import os
import signal
import subprocess
import sys
import time

from browser_support import WAIT_SECONDS, click, find, present, start_chromium, wait

BINARY = os.environ["MEMO_PEER"]
WORK = os.environ["MEMO_PEER_WEB_WORK"]
PEER = "5HUOJLKAPDGZ36YZNUDCM3MKC7OEYQTJLE4KXELYDPX3COPYZXFA"
BIDI_TITLE = "Invoice \u202efdp.exe"
signal.alarm(300)


def step(text):
    print(f"--- {text}", flush=True)


def cli(*arguments, stdin=None):
    result = subprocess.run(
        [BINARY, *arguments], input=(stdin or "").encode(), capture_output=True, timeout=60, check=False)
    assert result.returncode == 0, f"memo-peer {' '.join(arguments)}: {result.stderr.decode()}"
    return result.stdout.decode()


def start_server():
    out_path = os.path.join(WORK, "details.out")
    out = open(out_path, "wb")
    server = subprocess.Popen([BINARY, "web", "--port", "0"], stdout=out, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        with open(out_path, encoding="utf-8") as printed:
            links = [line.strip() for line in printed if line.startswith("http://")]
        if links:
            return server, links[0]
        assert server.poll() is None, "memo-peer web exited"
        time.sleep(0.1)
    raise AssertionError("memo-peer web printed no link")


def message(driver):
    return find(driver, "#message").text


def main():
    cli("trust", "add", PEER, "--name", "kitchen-laptop-in-the-hallway")
    bidi = cli("new", "--title", BIDI_TITLE, stdin="quarterly numbers\n").strip()
    edited = cli("new", "--title", "Shopping", stdin="milk\n").strip()
    server, link = start_server()
    driver = None
    try:
        driver = start_chromium(
            os.path.join(WORK, "profile-details"), os.path.join(WORK, "cache-details"),
            os.path.join(WORK, "chromedriver-details.log"), {"browser": "ALL"})
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True})
        driver.get(link)
        wait(driver, lambda: driver.execute_script("return document.body.dataset.ready === 'true'"), "the page")
        assert driver.execute_script("return window.innerWidth") == 390

        step("a title with a right-to-left override is shown escaped, as on the terminal")
        item = f".memo-item[data-id='{bidi}'] .title bdi"
        wait(driver, lambda: present(driver, item), "the memo in the list")
        assert find(driver, item).get_attribute("textContent") == "Invoice \\u{202e}fdp.exe [escaped]", \
            find(driver, item).get_attribute("textContent")
        listed = cli("list")
        assert "Invoice \\u{202e}fdp.exe [escaped]" in listed, f"the terminal shows it so: {listed}"

        step("at 390 px the Devices view fits the window")
        click(driver, ".tab[data-view=devices]")
        wait(driver, lambda: present(driver, "#devices"), "the devices table")
        widths = driver.execute_script(
            "const wrap = document.querySelector('#devices-wrap'); const table = document.querySelector('#devices');"
            "return {page: document.documentElement.scrollWidth, window: document.documentElement.clientWidth,"
            " wrap: wrap.scrollWidth, wrapClient: wrap.clientWidth, table: table.getBoundingClientRect().width};")
        assert widths["page"] <= widths["window"], widths
        assert widths["wrap"] <= widths["wrapClient"], widths
        assert widths["table"] <= 390, widths
        assert "kitchen-laptop-in-the-hallway" in find(driver, "#devices").text
        labels = driver.execute_script(
            "return [...document.querySelectorAll('#devices tbody td')].map((td) => td.dataset.label);")
        assert "Last synced" in labels, f"each value keeps its column's name: {labels}"

        step("a save that crossed an edit made elsewhere: said in the page's words")
        click(driver, ".tab[data-view=memos]")
        click(driver, f".memo-item[data-id='{edited}']")
        click(driver, "#edit-button")
        wait(driver, lambda: present(driver, "#editor-body"), "the editor")
        find(driver, "#editor-body").send_keys(" and bread")
        cli("edit", edited, "--stdin", stdin="milk and eggs\n")
        click(driver, "#save-button")
        wait(driver, lambda: "changed somewhere else" in message(driver), "the page's own message")
        said = message(driver)
        assert "memo-peer" not in said, said
        assert "saved as a new memo" in said, said
        wait(driver, lambda: present(driver, "#memo-body") and "and bread" in find(driver, "#memo-body").text,
             "the new memo, open")
        memos = json.loads(cli("list", "--json"))["memos"]
        bodies = sorted(json.loads(cli("show", memo["id"], "--json"))["memo"]["body"] for memo in memos
                        if memo["title"] == "Shopping")
        assert len(bodies) == 2, bodies
        assert any("and bread" in body for body in bodies), "the typed text, as a memo of its own"
        assert any(body.startswith("milk and eggs") for body in bodies), "the other change, kept"
        print("page details test passed", flush=True)
    except BaseException:
        if driver is not None:
            try:
                print(driver.page_source[:4000])
            except Exception:  # noqa: BLE001 (the failure itself matters, not this)
                pass
        raise
    finally:
        if driver is not None:
            driver.quit()
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


if __name__ == "__main__":
    try:
        main()
    except AssertionError as failure:
        print(f"FAILED: {failure}", file=sys.stderr)
        sys.exit(1)
