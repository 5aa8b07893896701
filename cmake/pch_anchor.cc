// Compiled only so that its target owns a precompiled header (see
// cmake/precompiled_headers.cmake); it defines nothing.
