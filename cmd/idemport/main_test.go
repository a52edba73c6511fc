package main

import (
	"os"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }
