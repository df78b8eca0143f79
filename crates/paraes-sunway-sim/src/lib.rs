//! paraes-sunway-sim: the SW26010 simulator (work in progress).
