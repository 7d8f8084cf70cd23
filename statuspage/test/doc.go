// Package test holds the browser test of package statuspage: the status
// page of a scan, with scopes in every state, rendered by headless
// Chromium at 1280 x 800 (and narrower), where it must fit the window and
// show each scope's state, and in frames of one Chromium every 16 px from
// 1024 to 1920 px wide, where it must cut no operation short. It is a
// module of its own, so that the core module's tests need nothing but Go;
// scripts/test installs Chromium (scripts/test.d/chromium.sh) before it
// runs this one.
package test
