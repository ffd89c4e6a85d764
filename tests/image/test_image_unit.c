/* test_image_unit.c - image layer unit tests (being written). */
#include "test_util.h"
int main(void) { return test_summary("test_image_unit"); }
