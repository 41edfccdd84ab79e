"""A fake pyusb backend (``usb.backend.IBackend``): the real ``PyUsbBackend`` and pyusb itself run against it
(``usb.core.find(backend=...)``), only libusb and the wire are replaced. One card reader (docs/reader.md):
device/configuration/interface/endpoint descriptors, the serial string, one interrupt-IN endpoint 0x81 whose
reports the test queues, and an unplug that makes every transfer fail as libusb does (ENODEV)."""

from __future__ import annotations

import errno
import threading
from collections import deque
from types import SimpleNamespace

import usb.backend
import usb.core

from drivers import events as ev
from drivers.protocol import messages as msg
from drivers.protocol.framing import encode_frame
from drivers.usb_reader import EP_IN, REPORT_SIZE, reports_for


def _string_descriptor(text: str) -> bytes:
    data = text.encode("utf-16-le")
    return bytes([2 + len(data), 3]) + data


class FakeReaderUsb(usb.backend.IBackend):
    def __init__(self, vendor_id: int, product_id: int, serial: str) -> None:
        self.vendor_id, self.product_id, self.serial = vendor_id, product_id, serial
        self.reports: deque[bytes] = deque()
        self.plugged = True
        self.claimed = False
        self.reads = 0
        self._seq = 0
        self._ready = threading.Condition()

    # ---- what the test does ----
    def push_event(self, e: ev.DeviceEvent) -> None:
        type_, payload = msg.encode_event(e)
        seq, self._seq = self._seq, (self._seq + 1) & 0xFF
        with self._ready:
            self.reports.extend(reports_for(encode_frame(seq, type_, payload)))
            self._ready.notify_all()

    def unplug(self) -> None:
        with self._ready:
            self.plugged = False
            self._ready.notify_all()

    def plug(self) -> None:
        self.plugged = True

    def _gone(self) -> None:
        if not self.plugged:
            raise usb.core.USBError(
                "No such device (it may have been disconnected)", errno.ENODEV, errno.ENODEV
            )

    # ---- IBackend ----
    def enumerate_devices(self):
        if self.plugged:
            yield "reader"

    def get_device_descriptor(self, dev):
        return SimpleNamespace(
            bLength=18, bDescriptorType=1, bcdUSB=0x0200, bDeviceClass=0, bDeviceSubClass=0,
            bDeviceProtocol=0, bMaxPacketSize0=64, idVendor=self.vendor_id, idProduct=self.product_id,
            bcdDevice=0x0100, iManufacturer=0, iProduct=0, iSerialNumber=1, bNumConfigurations=1,
            address=5, bus=1, port_number=2, port_numbers=(2,), speed=None,
        )  # fmt: skip

    def get_configuration_descriptor(self, dev, config):
        return SimpleNamespace(
            bLength=9, bDescriptorType=2, wTotalLength=32, bNumInterfaces=1, bConfigurationValue=1,
            iConfiguration=0, bmAttributes=0x80, bMaxPower=50, extra_descriptors=[],
        )  # fmt: skip

    def get_interface_descriptor(self, dev, intf, alt, config):
        return SimpleNamespace(
            bLength=9, bDescriptorType=4, bInterfaceNumber=0, bAlternateSetting=0, bNumEndpoints=1,
            bInterfaceClass=3, bInterfaceSubClass=0, bInterfaceProtocol=0, iInterface=0, extra_descriptors=[],
        )  # fmt: skip

    def get_endpoint_descriptor(self, dev, ep, intf, alt, config):
        return SimpleNamespace(
            bLength=7, bDescriptorType=5, bEndpointAddress=EP_IN, bmAttributes=3,  # interrupt
            wMaxPacketSize=REPORT_SIZE, bInterval=1, bRefresh=0, bSynchAddress=0, extra_descriptors=[],
        )  # fmt: skip

    def open_device(self, dev):
        self._gone()
        return "handle"

    def close_device(self, dev_handle):
        pass

    def set_configuration(self, dev_handle, config_value):
        self._gone()

    def get_configuration(self, dev_handle):
        return 1

    def claim_interface(self, dev_handle, intf):
        self._gone()
        self.claimed = True

    def release_interface(self, dev_handle, intf):
        self.claimed = False

    def is_kernel_driver_active(self, dev_handle, intf):
        return False

    def ctrl_transfer(self, dev_handle, bmRequestType, bRequest, wValue, wIndex, data, timeout):
        self._gone()
        if bRequest == 0x06 and wValue >> 8 == 3:  # GET_DESCRIPTOR (string)
            raw = bytes([4, 3, 0x09, 0x04]) if wValue & 0xFF == 0 else _string_descriptor(self.serial)
            n = min(len(raw), len(data))
            data[:n] = type(data)(data.typecode, raw[:n])
            return n
        raise usb.core.USBError("Pipe error", errno.EPIPE, errno.EPIPE)

    def intr_read(self, dev_handle, ep, intf, buff, timeout):
        with self._ready:
            self._ready.wait_for(lambda: self.reports or not self.plugged, timeout / 1000)
            self._gone()
            if not self.reports:
                raise usb.core.USBTimeoutError("Operation timed out", errno.ETIMEDOUT, errno.ETIMEDOUT)
            report = self.reports.popleft()
            self.reads += 1
        buff[: len(report)] = type(buff)(buff.typecode, report)
        return len(report)
