//! paraes-mpi: the MPI runner (work in progress).
