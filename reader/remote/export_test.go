package remote

import "time"

// SweepSpool sweeps dir as a new spool named keep does at now, calling
// meet with each copy it found old before it takes that copy's lock.
func SweepSpool(dir, keep string, now time.Time, meet func(name string)) error {
	root, err := openPrivateDir(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	sweepSpool(root, keep, now, nil, meet)
	return nil
}
