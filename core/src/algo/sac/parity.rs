//! SAC update parity with the PyTorch reference (filled in below).
