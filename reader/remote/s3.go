package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/idemport/idemport/reader"
)

// newS3 builds an S3 client from the standard AWS configuration chain
// (environment, shared config and credentials files, SSO, instance roles;
// AWS_ENDPOINT_URL included), with the options' endpoint and addressing on
// top. Checksums are computed and validated only when an operation requires
// them: the SDK's default since service/s3 v1.73 breaks MinIO, Ceph and R2.
// The SDK's own retries are off; Object retries every request alike.
func newS3(ctx context.Context, o Options) (*s3.Client, error) {
	opts := []func(*config.LoadOptions) error{
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	}
	if o.Region != "" {
		opts = append(opts, config.WithRegion(o.Region))
	}
	if o.HTTPClient != nil {
		opts = append(opts, config.WithHTTPClient(o.HTTPClient))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1" // what MinIO and most S3-compatible stores expect when none is set
	}
	return s3.NewFromConfig(cfg, func(so *s3.Options) {
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
		so.UsePathStyle = o.PathStyle
		so.Retryer = aws.NopRetryer{}
	}), nil
}

// s3Object reads one S3 object.
type s3Object struct {
	client      *s3.Client
	bucket, key string
	shown       string
}

var _ backend = (*s3Object)(nil)

func (o *s3Object) stat(ctx context.Context) (Info, error) {
	out, err := o.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &o.bucket, Key: &o.key})
	if err != nil {
		return Info{}, s3Error(ctx, o.shown, err)
	}
	if out.ContentLength == nil {
		return Info{}, fmt.Errorf("%s: the server does not say the size", o.shown)
	}
	return Info{Size: *out.ContentLength, ETag: aws.ToString(out.ETag), Version: aws.ToString(out.VersionId),
		ModTime: aws.ToTime(out.LastModified)}, nil
}

func (o *s3Object) get(ctx context.Context, info Info, off, end int64) (io.ReadCloser, error) {
	in := &s3.GetObjectInput{Bucket: &o.bucket, Key: &o.key, Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, end-1))}
	if info.ETag != "" {
		in.IfMatch = aws.String(info.ETag)
	}
	if info.Version != "" {
		in.VersionId = aws.String(info.Version)
	}
	out, err := o.client.GetObject(ctx, in)
	if err != nil {
		return nil, s3Error(ctx, o.shown, err)
	}
	if etag := aws.ToString(out.ETag); etag != "" && info.ETag != "" && etag != info.ETag {
		out.Body.Close()
		return nil, fmt.Errorf("%w: %s was replaced since it was opened (ETag %s, now %s)", reader.ErrSourceChanged, o.shown, info.ETag, etag)
	}
	length := int64(-1)
	if out.ContentLength != nil {
		length = *out.ContentLength
	}
	if cr := aws.ToString(out.ContentRange); cr != "" {
		first, last, total, ok := contentRange(cr)
		if !ok || first != off || (total >= 0 && total != info.Size) {
			out.Body.Close()
			return nil, fmt.Errorf("%w: %s answered range %d-%d with %q (object of %d bytes)",
				reader.ErrSourceChanged, o.shown, off, end-1, cr, info.Size)
		}
		return frame(out.Body, o.shown, off, end, first, last+1, length, info.Size)
	}
	if off > 0 {
		out.Body.Close()
		return nil, fmt.Errorf("%s: the server ignored the range %d-%d", o.shown, off, end-1)
	}
	return frame(out.Body, o.shown, off, end, 0, info.Size, length, info.Size)
}

// s3Error classifies an SDK failure: a changed object, a retryable one
// (5xx, throttling, a failed send) or a final *StatusError.
func s3Error(ctx context.Context, shown string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var code string
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		status := re.HTTPStatusCode()
		switch {
		case status == http.StatusPreconditionFailed:
			return fmt.Errorf("%w: %s was replaced since it was opened (412)", reader.ErrSourceChanged, shown)
		case isRetryableStatus(status) || code == "SlowDown" || code == "Throttling" || code == "RequestTimeout":
			return retryable{&StatusError{URL: shown, Status: status, Code: code}}
		}
		return &StatusError{URL: shown, Status: status, Code: code}
	}
	var se *smithyhttp.RequestSendError
	if errors.As(err, &se) {
		return retryable{fmt.Errorf("%s: %w", shown, err)}
	}
	return fmt.Errorf("%s: %w", shown, err)
}

// listed is an object as a LIST page names it.
type listed struct {
	key  string
	info Info // no version id: a listing names none
}

// list returns the objects below prefix in bucket, in key order, whose base
// name matches glob (every key when glob is ""); keys ending in "/" (folder
// markers) are left out.
func listS3(ctx context.Context, client *s3.Client, bucket, prefix, glob, shown string, r Retry, stats *Stats) ([]listed, error) {
	var objs []listed
	in := &s3.ListObjectsV2Input{Bucket: &bucket}
	if prefix != "" {
		in.Prefix = &prefix
	}
	p := s3.NewListObjectsV2Paginator(client, in)
	for p.HasMorePages() {
		var page *s3.ListObjectsV2Output
		for n := 1; ; n++ {
			var err error
			page, err = p.NextPage(ctx)
			stats.add(1, 0, 0)
			if err == nil {
				break
			}
			err = s3Error(ctx, shown, err)
			var rt retryable
			if !errors.As(err, &rt) || n >= r.Attempts {
				return nil, fmt.Errorf("list %w", err)
			}
			stats.add(0, 0, 1)
			if werr := r.wait(ctx, n); werr != nil {
				return nil, werr
			}
		}
		for _, obj := range page.Contents {
			key := aws.ToString(obj.Key)
			if key == "" || strings.HasSuffix(key, "/") {
				continue
			}
			if glob != "" {
				if ok, _ := path.Match(glob, path.Base(key)); !ok {
					continue
				}
			}
			info := Info{ETag: aws.ToString(obj.ETag), ModTime: aws.ToTime(obj.LastModified), Size: -1}
			if obj.Size != nil {
				info.Size = *obj.Size
			}
			objs = append(objs, listed{key: key, info: info})
		}
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].key < objs[j].key })
	return objs, nil
}
