package fusefs

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestStableAttr(t *testing.T) {
	m, _ := testMirror(&fakeSandbox{}, time.Minute, time.Minute)
	at := func(dev, ino uint64) uint64 {
		return m.stableAttr(&unix.Stat_t{Dev: dev, Ino: ino, Mode: unix.S_IFREG | 0o644}).Ino
	}
	// On the root's device, the inode number is the backing file's.
	if got := at(testRootDev, 42); got != 42 {
		t.Errorf("inode 42 on the root's device: %d, want 42", got)
	}
	// Another device (a mount inside the root) gets other numbers, one per
	// device, the same every time.
	other, third := at(0x804, 42), at(0x10803, 42)
	if other == 42 || third == 42 || other == third {
		t.Errorf("inode 42 on three devices: %d, %d, %d; want three numbers", 42, other, third)
	}
	if again := at(0x804, 42); again != other {
		t.Errorf("inode 42 on device 0x804: %d, then %d", other, again)
	}
	if at(0x804, 43) == other {
		t.Errorf("inodes 42 and 43 of device 0x804 share a number")
	}
	sa := m.stableAttr(&unix.Stat_t{Dev: testRootDev, Ino: 7, Mode: unix.S_IFDIR | 0o755})
	if sa.Mode != unix.S_IFDIR|0o755 || sa.Gen != 1 {
		t.Errorf("stableAttr: mode %#o gen %d, want %#o 1", sa.Mode, sa.Gen, unix.S_IFDIR|0o755)
	}
}
