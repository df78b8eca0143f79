//! paraes-gpu: the CUDA GPU engine (work in progress).
