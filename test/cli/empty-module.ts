// A module file with nothing `skein serve` can load.
export const nothing = 42
