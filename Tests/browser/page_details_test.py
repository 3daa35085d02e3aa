#!/usr/bin/python3
"""Details of the page seen in issue 38, in headless chromium (selenium), in a network
namespace with only loopback; run by Tests/MemoCLITests/WebBrowserTests.swift:

- at phone width (390 px) the Devices view fits: nothing wider than the window;
- a title with a right-to-left override (or any control) is shown escaped, as the terminal
  shows it (`\\u{202e}` and ` [escaped]`), never drawn reversed;
- a save that crossed an edit made elsewhere says so in the page's own words (the text was
  kept as a new memo, which the page opens), not by naming a command;
- the Network view names this network (a veth interface made in the namespace, its peer
  left down: nothing is reachable through it) and, denied, says that memo-peer waits there;
  "Allow this network…" asks the question `network allow` records and records it with
  method `web`;
- a trusted device's address is added on the Devices view and listed (and on the command
  line), a wrong one ("host:70000") is refused with the reason, and Remove takes it back.

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


def make_network():
    """An interface with an address besides loopback, so this namespace is on a network
    (no gateway: told apart by its prefix). Its peer stays down: nothing answers there."""
    for command in (["ip", "link", "add", "mpnet0", "type", "veth", "peer", "name", "mpnet1"],
                    ["ip", "addr", "add", "10.77.0.2/24", "dev", "mpnet0"],
                    ["ip", "link", "set", "mpnet0", "up"]):
        result = subprocess.run(command, capture_output=True, timeout=10, check=False)
        assert result.returncode == 0, f"{' '.join(command)}: {result.stderr.decode()}"


def addresses_of(peer):
    return json.loads(cli("trust", "address", peer, "list", "--json"))["addresses"]


def main():
    make_network()
    cli("trust", "add", PEER, "--name", "kitchen-laptop-in-the-hallway")
    cli("network", "deny")
    networks = json.loads(cli("network", "list", "--json"))
    assert networks["current_state"] == "denied", networks
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

        step("a trusted device's address: added, listed, a wrong one refused, removed")
        row = f".addresses[data-device='{PEER}']"
        wait(driver, lambda: present(driver, row), "the device's addresses")
        assert "Given: none" in find(driver, row + " .given").text, find(driver, row).text
        assert "Last reached at: never" in find(driver, row).text, find(driver, row).text
        find(driver, row + " input[name=address]").send_keys("192.168.7.20:8426")
        click(driver, row + " .add-address-button")
        listed = row + " .address[data-address='192.168.7.20:8426']"
        wait(driver, lambda: present(driver, listed), "the added address, listed")
        assert "192.168.7.20:8426" in find(driver, listed).text
        assert "Added 192.168.7.20:8426" in message(driver), message(driver)
        assert addresses_of(PEER)["given"] == ["192.168.7.20:8426"], addresses_of(PEER)
        widths = driver.execute_script(
            "return {page: document.documentElement.scrollWidth, window: document.documentElement.clientWidth};")
        assert widths["page"] <= widths["window"], f"the addresses fit the phone's width too: {widths}"

        find(driver, row + " input[name=address]").send_keys("host:70000")
        click(driver, row + " .add-address-button")
        wait(driver, lambda: "70000" in message(driver), "the refusal")
        said = message(driver)
        assert "the port 70000 is outside 1 to 65535" in said, said
        assert "error" in find(driver, "#message").get_attribute("class"), "said as an error"
        assert find(driver, row + " input[name=address]").get_attribute("value") == "host:70000", \
            "the typed text stays, to be corrected"
        assert addresses_of(PEER)["given"] == ["192.168.7.20:8426"], "nothing was stored"

        click(driver, listed + " .remove-address")
        wait(driver, lambda: not present(driver, listed), "the address, removed")
        assert addresses_of(PEER)["given"] == [], addresses_of(PEER)

        step("the Network view names this network and says memo-peer waits on it until allowed")
        click(driver, ".tab[data-view=network]")
        wait(driver, lambda: present(driver, "#network-line"), "the network line")
        line = find(driver, "#network-line")
        assert line.get_attribute("data-state") == "denied", line.get_attribute("data-state")
        assert line.text.startswith("This network: mpnet0") and line.text.endswith("— denied"), line.text
        waits = find(driver, "#network-waits").text
        assert "memo-peer waits on this network" in waits and "nothing is advertised, browsed or dialled" in waits, \
            waits
        assert "not running" in find(driver, "#service-state").text, find(driver, "#service-state").text
        click(driver, "#allow-network")
        wait(driver, lambda: present(driver, "#network-question"), "the question")
        question = find(driver, "#network-question").text
        assert question.startswith("memo-peer has not been used on this network (mpnet0"), question
        assert json.loads(cli("network", "list", "--json"))["current_state"] == "denied", "nothing before the click"
        click(driver, "#dialog button[data-action=allow]")
        wait(driver, lambda: find(driver, "#network-line").get_attribute("data-state") == "allowed", "allowed")
        assert not present(driver, "#network-waits"), "no longer waiting"
        assert find(driver, "#network-line").text.endswith("— allowed"), find(driver, "#network-line").text
        networks = json.loads(cli("network", "list", "--json"))
        assert networks["current_state"] == "allowed", networks
        decided = [network for network in networks["networks"] if network["current"]]
        assert [network["method"] for network in decided] == ["web"], networks

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
