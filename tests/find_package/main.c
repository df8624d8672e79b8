/* Links giouring::host from an installed prefix (find_package or pkg-config). */
#include <giouring/giouring.h>

#include <stdio.h>

int main(void)
{
	const char *v = gio_version_string();

	if (v == NULL || v[0] == '\0') {
		fprintf(stderr, "gio_version_string() returned an empty string\n");
		return 1;
	}
	printf("giouring %s\n", v);
	return 0;
}
